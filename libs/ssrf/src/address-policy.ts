import ipaddr from "ipaddr.js";
import type { RefusedClass } from "./errors";

/**
 * Which IP addresses an outbound call may reach. The rule is "global unicast only": every
 * special-purpose range is refused, with the class named so the refusal explains itself.
 * docs/federation.md lists the same table; keep them in step.
 */

export interface AddressPolicy {
  /**
   * TEST-ONLY. Lets 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 through so tests can run two
   * peers on one machine. Off by default; never set it from production configuration.
   */
  readonly allowLoopback?: boolean;
  /**
   * Networks an operator allow-lists (CIDR, e.g. `10.20.0.0/16`, `127.0.0.1/32`): an address in
   * one of them is allowed even in a refused class (private, loopback, ...). Cloud metadata
   * addresses stay refused whatever is listed. Parse the list once with `parseAllowedNetworks`.
   */
  readonly allowedNetworks?: readonly AllowedNetwork[];
}

/** One allow-listed network, parsed. */
export interface AllowedNetwork {
  readonly cidr: string;
  readonly range: [ipaddr.IPv4 | ipaddr.IPv6, number];
}

/** Parses an operator's allow-list; throws a sentence naming the first entry that is not a CIDR. */
export function parseAllowedNetworks(entries: readonly string[]): AllowedNetwork[] {
  return entries
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const text = entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`;
      try {
        return { cidr: text, range: ipaddr.parseCIDR(text) };
      } catch {
        throw new Error(`${entry} is not a network in CIDR notation (e.g. 10.20.0.0/16 or 127.0.0.1/32)`);
      }
    });
}

function inAllowedNetwork(address: ipaddr.IPv4 | ipaddr.IPv6, policy: AddressPolicy): boolean {
  for (const network of policy.allowedNetworks ?? []) {
    const [net] = network.range;
    if (net.kind() !== address.kind()) continue;
    if (address.match(network.range)) return true;
  }
  return false;
}

export type AddressVerdict =
  | { readonly allowed: true; readonly family: 4 | 6; readonly address: string }
  | { readonly allowed: false; readonly refusedClass: RefusedClass; readonly reason: string };

type Cidr = readonly [string, number, RefusedClass, string];

/** Cloud metadata endpoints: named first so the refusal says "metadata", not "link-local". */
const METADATA_ADDRESSES: readonly string[] = [
  "169.254.169.254", // AWS, GCP, Azure, OpenStack, DigitalOcean instance metadata
  "169.254.170.2", // AWS ECS task metadata
  "100.100.100.200", // Alibaba Cloud metadata
  "192.0.0.192", // Oracle Cloud metadata
  "fd00:ec2::254", // AWS instance metadata over IPv6
];

/** IPv4 special-purpose ranges (IANA registry, RFC 6890 and successors). */
export const REFUSED_IPV4: readonly Cidr[] = [
  // Broadcast sits inside 240.0.0.0/4; listed first so the narrower name wins.
  ["255.255.255.255", 32, "broadcast", "255.255.255.255 (broadcast)"],
  ["0.0.0.0", 8, "unspecified", "0.0.0.0/8 (this network)"],
  ["10.0.0.0", 8, "private", "10.0.0.0/8 (private, RFC 1918)"],
  ["100.64.0.0", 10, "carrier_grade_nat", "100.64.0.0/10 (carrier-grade NAT)"],
  ["127.0.0.0", 8, "loopback", "127.0.0.0/8 (loopback)"],
  ["169.254.0.0", 16, "link_local", "169.254.0.0/16 (link-local)"],
  ["172.16.0.0", 12, "private", "172.16.0.0/12 (private, RFC 1918)"],
  ["192.0.0.0", 24, "reserved", "192.0.0.0/24 (IETF protocol assignments)"],
  ["192.0.2.0", 24, "documentation", "192.0.2.0/24 (documentation)"],
  ["192.31.196.0", 24, "as112", "192.31.196.0/24 (AS112)"],
  ["192.52.193.0", 24, "amt", "192.52.193.0/24 (AMT)"],
  ["192.88.99.0", 24, "reserved", "192.88.99.0/24 (deprecated 6to4 relay anycast)"],
  ["192.168.0.0", 16, "private", "192.168.0.0/16 (private, RFC 1918)"],
  ["192.175.48.0", 24, "as112", "192.175.48.0/24 (AS112)"],
  ["198.18.0.0", 15, "benchmarking", "198.18.0.0/15 (benchmarking)"],
  ["198.51.100.0", 24, "documentation", "198.51.100.0/24 (documentation)"],
  ["203.0.113.0", 24, "documentation", "203.0.113.0/24 (documentation)"],
  ["224.0.0.0", 4, "multicast", "224.0.0.0/4 (multicast)"],
  ["240.0.0.0", 4, "reserved", "240.0.0.0/4 (reserved)"],
];

/**
 * IPv6 special-purpose ranges. Ranges that carry an IPv4 address (mapped, NAT64, 6to4) are not
 * here: their embedded IPv4 address is judged instead (see EMBEDDING_IPV6).
 */
export const REFUSED_IPV6: readonly Cidr[] = [
  ["::", 128, "unspecified", "::/128 (unspecified)"],
  ["::1", 128, "loopback", "::1/128 (loopback)"],
  ["::", 96, "reserved", "::/96 (deprecated IPv4-compatible)"],
  ["::ffff:0:0:0", 96, "ipv4_translated", "::ffff:0:0:0/96 (IPv4-translated)"],
  ["64:ff9b:1::", 48, "nat64_local", "64:ff9b:1::/48 (local-use NAT64)"],
  ["100::", 64, "discard", "100::/64 (discard)"],
  ["2001::", 32, "teredo", "2001::/32 (Teredo tunnelling)"],
  ["2001:2::", 48, "benchmarking", "2001:2::/48 (benchmarking)"],
  ["2001:10::", 28, "orchid", "2001:10::/28 (ORCHID)"],
  ["2001:20::", 28, "orchid", "2001:20::/28 (ORCHIDv2)"],
  ["2001:db8::", 32, "documentation", "2001:db8::/32 (documentation)"],
  ["3fff::", 20, "documentation", "3fff::/20 (documentation)"],
  ["5f00::", 16, "segment_routing", "5f00::/16 (segment routing)"],
  ["fc00::", 7, "unique_local", "fc00::/7 (unique-local)"],
  ["fe80::", 10, "link_local", "fe80::/10 (link-local)"],
  ["fec0::", 10, "site_local", "fec0::/10 (deprecated site-local)"],
  ["ff00::", 8, "multicast", "ff00::/8 (multicast)"],
];

/** IPv6 prefixes that embed an IPv4 address, and where: the bytes of the IPv4 address. */
const EMBEDDING_IPV6: readonly (readonly [string, number, string, number])[] = [
  ["::ffff:0:0", 96, "IPv4-mapped", 12],
  ["64:ff9b::", 96, "NAT64", 12],
  ["2002::", 16, "6to4", 2],
];

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");

const parsedV4 = REFUSED_IPV4.map(([net, bits, cls, label]) => [ipaddr.IPv4.parse(net), bits, cls, label] as const);
const parsedV6 = REFUSED_IPV6.map(([net, bits, cls, label]) => [ipaddr.IPv6.parse(net), bits, cls, label] as const);
const parsedEmbedding = EMBEDDING_IPV6.map(([net, bits, label, offset]) => [ipaddr.IPv6.parse(net), bits, label, offset] as const);
const metadataCanonical = new Set(METADATA_ADDRESSES.map((a) => ipaddr.parse(a).toString()));

/**
 * Parses any spelling of an IP address a URL host or a resolver may hand us: dotted decimal,
 * octal (0177.0.0.1), hex (0x7f.1), short (127.1), one 32-bit number (2130706433), IPv6 in any
 * compression, bracketed. Returns null for anything that is not an address. A zone id is kept on
 * the IPv6 value so the caller can refuse it.
 */
export function parseAnyIp(raw: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const text = raw.startsWith("[") && raw.endsWith("]") ? raw.slice(1, -1) : raw;
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  // ipaddr's IPv4 parser accepts the legacy inet_aton spellings (octal, hex, short, long) that
  // the WHATWG URL parser and the C library also accept.
  if (ipaddr.IPv4.isValid(text)) return ipaddr.IPv4.parse(text);
  return null;
}

export function isIpLiteral(raw: string): boolean {
  return parseAnyIp(raw) !== null;
}

function refuse(refusedClass: RefusedClass, reason: string): AddressVerdict {
  return { allowed: false, refusedClass, reason };
}

function judgeV4(address: ipaddr.IPv4, policy: AddressPolicy): AddressVerdict {
  const canonical = address.toString();
  if (metadataCanonical.has(canonical)) return refuse("metadata", `${canonical} is a cloud metadata address`);
  if (inAllowedNetwork(address, policy)) return { allowed: true, family: 4, address: canonical };
  for (const [net, bits, cls, label] of parsedV4) {
    if (!address.match(net, bits)) continue;
    if (cls === "loopback" && policy.allowLoopback) return { allowed: true, family: 4, address: canonical };
    return refuse(cls, `${canonical} is in ${label}`);
  }
  // Belt and braces: a range ipaddr.js knows and the table above does not is refused too.
  const range = address.range();
  if (range !== "unicast") return refuse("reserved", `${canonical} is in a special-purpose range (${range})`);
  return { allowed: true, family: 4, address: canonical };
}

function judgeV6(address: ipaddr.IPv6, policy: AddressPolicy): AddressVerdict {
  if (address.zoneId !== undefined) {
    return refuse("zone_id", "an IPv6 address with a zone id is scoped to a local link");
  }
  const canonical = address.toRFC5952String();
  if (metadataCanonical.has(address.toString())) return refuse("metadata", `${canonical} is a cloud metadata address`);
  if (inAllowedNetwork(address, policy)) return { allowed: true, family: 6, address: canonical };

  for (const [net, bits, label, offset] of parsedEmbedding) {
    if (!address.match(net, bits)) continue;
    const bytes = address.toByteArray().slice(offset, offset + 4);
    const embedded = new ipaddr.IPv4(bytes);
    const isMapped = label === "IPv4-mapped";
    // Only a plain IPv4-mapped address is the same host as its IPv4 address; loopback through
    // NAT64 or 6to4 is never a test peer.
    const inner = judgeV4(embedded, isMapped ? policy : {});
    if (!inner.allowed) {
      return refuse(inner.refusedClass, `${canonical} is a ${label} address embedding ${embedded.toString()}: ${inner.reason}`);
    }
    // A mapped address is connected to as the IPv4 address it names; NAT64 and 6to4 addresses
    // must go through their translator, so they are connected to as IPv6.
    return isMapped ? inner : { allowed: true, family: 6, address: canonical };
  }

  for (const [net, bits, cls, label] of parsedV6) {
    if (!address.match(net, bits)) continue;
    if (cls === "loopback" && policy.allowLoopback) return { allowed: true, family: 6, address: canonical };
    return refuse(cls, `${canonical} is in ${label}`);
  }
  if (!address.match(GLOBAL_UNICAST_V6)) {
    return refuse("not_global_unicast", `${canonical} is outside 2000::/3 (global unicast)`);
  }
  const range = address.range() as string;
  if (range !== "unicast") return refuse("reserved", `${canonical} is in a special-purpose range (${range})`);
  return { allowed: true, family: 6, address: canonical };
}

/**
 * Judges one address in any spelling. On success `address` is the canonical text to connect to
 * (IPv4-mapped addresses come back as their IPv4 address).
 */
export function judgeAddress(raw: string, policy: AddressPolicy = {}): AddressVerdict {
  const parsed = parseAnyIp(raw);
  if (parsed === null) return refuse("not_an_address", "the resolver returned something that is not an IP address");
  return parsed.kind() === "ipv4" ? judgeV4(parsed as ipaddr.IPv4, policy) : judgeV6(parsed as ipaddr.IPv6, policy);
}
