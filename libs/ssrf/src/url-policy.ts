import { judgeAddress, parseAnyIp, type AddressPolicy } from "./address-policy";
import { blocked } from "./errors";
import { judgeHostname } from "./hostname-policy";

/** What the URL names as its host: an address to judge now, or a name to resolve first. */
export type OutboundHost =
  | { readonly kind: "address"; readonly address: string; readonly family: 4 | 6 }
  | { readonly kind: "name"; readonly hostname: string };

export interface OutboundUrl {
  readonly url: URL;
  readonly host: OutboundHost;
}

/**
 * The checks that need no network: scheme, userinfo, internal names and address literals in
 * every spelling. Used alone to validate an `origin_server_url` at registration, and as the
 * first step of every outbound call. Throws OutboundError(SSRF_BLOCKED).
 */
export function checkOutboundUrl(input: string | URL, policy: AddressPolicy = {}): OutboundUrl {
  let url: URL;
  try {
    // Parsing the text again (rather than trusting a URL object) gives one normal form: the
    // WHATWG parser rewrites decimal, octal, hex and short IPv4 hosts to dotted decimal.
    url = new URL(typeof input === "string" ? input : input.href);
  } catch {
    throw blocked("invalid_url", "the address is not a valid absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw blocked("scheme", `the scheme ${url.protocol.replace(/:$/, "")} is refused; only http and https are allowed`);
  }
  if (url.username !== "" || url.password !== "") {
    throw blocked("userinfo", "a URL with user information before the host is refused");
  }
  const hostText = url.hostname;
  if (parseAnyIp(hostText) !== null) {
    const verdict = judgeAddress(hostText, policy);
    if (!verdict.allowed) throw blocked(verdict.refusedClass, `the destination is refused: ${verdict.reason}`);
    return { url, host: { kind: "address", address: verdict.address, family: verdict.family } };
  }
  const verdict = judgeHostname(hostText, policy);
  if (!verdict.allowed) throw blocked(verdict.refusedClass, `the destination is refused: ${verdict.reason}`);
  return { url, host: { kind: "name", hostname: verdict.hostname } };
}
