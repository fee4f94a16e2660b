import { lookup } from "node:dns/promises";
import { judgeAddress, type AddressPolicy } from "./address-policy";
import { blocked, failed, OutboundError } from "./errors";
import { checkOutboundUrl } from "./url-policy";

export interface ResolvedAddress {
  readonly address: string;
  readonly family?: number;
}

/**
 * Turns a hostname into every address it has. Injected so tests never query a real DNS server
 * and can play a rebinding resolver.
 */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<readonly ResolvedAddress[]>;

/** The system resolver, asked for every address so that no answer goes unchecked. */
export const systemResolver: Resolver = async (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * A checked destination. `address` is the exact address judged; the connect step must use it
 * and nothing else (no second lookup, which a rebinding DNS server would answer differently).
 */
export interface PinnedDestination {
  readonly url: URL;
  /** The name as written, for the Host header and TLS server name; an address literal for IP URLs. */
  readonly hostname: string;
  readonly hostIsName: boolean;
  readonly address: string;
  readonly family: 4 | 6;
  readonly port: number;
}

export interface DestinationOptions extends AddressPolicy {
  readonly resolve?: Resolver;
}

function portOf(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}

/**
 * Checks a URL and pins the address to connect to. A name is refused if ANY of its addresses is
 * refused: a name that answers both a public and a private address is a rebinding attempt
 * waiting for the right moment.
 */
export async function pinDestination(input: string | URL, signal: AbortSignal, options: DestinationOptions = {}): Promise<PinnedDestination> {
  const { url, host } = checkOutboundUrl(input, options);
  const port = portOf(url);
  if (host.kind === "address") {
    return { url, hostname: host.address, hostIsName: false, address: host.address, family: host.family, port };
  }
  const resolve = options.resolve ?? systemResolver;
  let answers: readonly ResolvedAddress[];
  try {
    answers = await resolve(host.hostname, signal);
  } catch (error) {
    if (error instanceof OutboundError) throw error;
    if (signal.aborted) throw error;
    throw failed("dns_failed", `the name ${host.hostname} could not be resolved`);
  }
  if (answers.length === 0) throw blocked("no_address", `the name ${host.hostname} resolved to no address`);
  let pinned: { address: string; family: 4 | 6 } | undefined;
  for (const answer of answers) {
    const verdict = judgeAddress(answer.address, options);
    if (!verdict.allowed) {
      throw blocked(verdict.refusedClass, `${host.hostname} resolves to a refused address: ${verdict.reason}`);
    }
    pinned ??= { address: verdict.address, family: verdict.family };
  }
  // answers is non-empty and every answer was allowed, so pinned is set.
  const chosen = pinned as { address: string; family: 4 | 6 };
  return { url, hostname: host.hostname, hostIsName: true, address: chosen.address, family: chosen.family, port };
}
