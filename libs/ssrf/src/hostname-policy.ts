import type { RefusedClass } from "./errors";

/**
 * Names that point inside the network by convention rather than by DNS. They are refused
 * before any lookup: a resolver on a private network may answer them with anything, and the
 * lookup itself would leak the probe to that resolver.
 */
const INTERNAL_NAMES: ReadonlySet<string> = new Set([
  "localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "metadata.google.internal",
  "instance-data.ec2.internal",
]);

/** Suffixes reserved for local use (RFC 6761, RFC 6762, RFC 8375) or used by clouds internally. */
const INTERNAL_SUFFIXES: readonly string[] = [
  ".localhost",
  ".local",
  ".localdomain",
  ".internal",
  ".intranet",
  ".lan",
  ".home",
  ".corp",
  ".private",
  ".home.arpa",
  ".in-addr.arpa",
  ".ip6.arpa",
  ".invalid",
  ".test",
  ".example",
];

export interface HostnamePolicy {
  /** TEST-ONLY. Lets `localhost` and `*.localhost` through (their addresses are still judged). */
  readonly allowLoopback?: boolean;
}

export type HostnameVerdict =
  | { readonly allowed: true; readonly hostname: string }
  | { readonly allowed: false; readonly refusedClass: RefusedClass; readonly reason: string };

/**
 * Judges a DNS name as the WHATWG URL parser leaves it (lower case, punycode). One trailing dot
 * is the same name as none ("localhost." is localhost), so it is removed before any rule.
 */
export function judgeHostname(raw: string, policy: HostnamePolicy = {}): HostnameVerdict {
  const hostname = raw.endsWith(".") ? raw.slice(0, -1) : raw;
  if (hostname === "" || hostname.endsWith(".") || hostname.includes("..")) {
    return { allowed: false, refusedClass: "internal_hostname", reason: "the hostname is empty or has an empty label" };
  }
  const isLocalhost = hostname === "localhost" || hostname.endsWith(".localhost");
  if (isLocalhost && policy.allowLoopback) return { allowed: true, hostname };
  if (INTERNAL_NAMES.has(hostname)) {
    return { allowed: false, refusedClass: "internal_hostname", reason: `${hostname} is an internal hostname` };
  }
  const suffix = INTERNAL_SUFFIXES.find((s) => hostname.endsWith(s));
  if (suffix !== undefined) {
    return { allowed: false, refusedClass: "internal_hostname", reason: `names under ${suffix} are internal` };
  }
  // A single label ("intranet", "metadata", "db") is completed by the resolver's search list
  // into a name inside the network.
  if (!hostname.includes(".")) {
    return { allowed: false, refusedClass: "internal_hostname", reason: `${hostname} is a single-label name` };
  }
  return { allowed: true, hostname };
}
