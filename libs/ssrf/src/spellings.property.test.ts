import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { judgeAddress } from "./address-policy";
import { OutboundError } from "./errors";
import { checkOutboundUrl } from "./url-policy";

/**
 * Refused IPv4 ranges written out again here, independently of the library's table, so that a
 * range dropped from the library fails these properties.
 */
const REFUSED_V4_RANGES: readonly (readonly [string, number])[] = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16],
  ["172.16.0.0", 12], ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.31.196.0", 24], ["192.52.193.0", 24],
  ["192.88.99.0", 24], ["192.168.0.0", 16], ["192.175.48.0", 24], ["198.18.0.0", 15], ["198.51.100.0", 24],
  ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
];

function toNumber(dotted: string): number {
  return dotted.split(".").reduce((n, part) => n * 256 + Number(part), 0);
}

const RANGES_AS_NUMBERS = REFUSED_V4_RANGES.map(([net, bits]) => [toNumber(net), 2 ** (32 - bits)] as const);

function inRefusedRange(n: number): boolean {
  return RANGES_AS_NUMBERS.some(([base, size]) => n >= base && n < base + size);
}

function dotted(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

type Base = "dec" | "oct" | "hex" | "HEX";

function inBase(value: number, base: Base, padding: number): string {
  switch (base) {
    case "dec":
      return String(value);
    case "oct":
      return `0${"0".repeat(padding)}${value.toString(8)}`;
    case "hex":
      return `0x${"0".repeat(padding)}${value.toString(16)}`;
    case "HEX":
      return `0X${"0".repeat(padding)}${value.toString(16).toUpperCase()}`;
  }
}

const baseArb = fc.constantFrom<Base>("dec", "oct", "hex", "HEX");

/**
 * Every inet_aton spelling of an IPv4 address: four, three, two or one parts (the last part
 * filling the remaining bytes), each part in decimal, octal or hex, with leading zeros.
 */
function spellingArb(n: number): fc.Arbitrary<string> {
  const bytes = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255] as const;
  const parts = fc.constantFrom(1, 2, 3, 4).map((count) => {
    const head = bytes.slice(0, count - 1);
    const tail = bytes.slice(count - 1).reduce((acc, b) => acc * 256 + b, 0);
    return [...head, tail];
  });
  return fc
    .tuple(parts, fc.array(baseArb, { minLength: 4, maxLength: 4 }), fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 4, maxLength: 4 }))
    .map(([values, bases, paddings]) => values.map((v, i) => inBase(v, bases[i] ?? "dec", paddings[i] ?? 0)).join("."));
}

/** IPv6 spellings that carry the IPv4 address n and must be judged as that address. */
function v6CarrierArb(n: number): fc.Arbitrary<string> {
  const hi = (n >>> 16).toString(16);
  const lo = (n & 0xffff).toString(16);
  return fc.constantFrom(
    `::ffff:${dotted(n)}`,
    `::FFFF:${hi}:${lo}`,
    `0:0:0:0:0:ffff:${dotted(n)}`,
    `0000:0000:0000:0000:0000:ffff:${hi.padStart(4, "0")}:${lo.padStart(4, "0")}`,
    `64:ff9b::${dotted(n)}`,
    `2002:${hi}:${lo}::1`,
  );
}

const refusedV4 = fc
  .tuple(fc.integer({ min: 0, max: RANGES_AS_NUMBERS.length - 1 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }))
  .map(([index, fraction]) => {
    const [base, size] = RANGES_AS_NUMBERS[index] as readonly [number, number];
    return base + Math.floor(fraction * size);
  });

const publicV4 = fc.integer({ min: 0, max: 0xffffffff }).filter((n) => !inRefusedRange(n) && n !== 0xffffffff);

function refusedByUrl(url: string): boolean {
  try {
    checkOutboundUrl(url);
    return false;
  } catch (error) {
    return error instanceof OutboundError && error.code === "SSRF_BLOCKED";
  }
}

describe("every IPv4 spelling", () => {
  it("of an address in a refused range is refused in a URL", () => {
    fc.assert(
      fc.property(refusedV4.chain((n) => spellingArb(n).map((s) => [n, s] as const)), ([, spelling]) => {
        expect(refusedByUrl(`http://${spelling}/`)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("of an address in a refused range is refused from a resolver", () => {
    fc.assert(
      fc.property(refusedV4.chain((n) => spellingArb(n)), (spelling) => {
        expect(judgeAddress(spelling).allowed).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("of an address in a refused range is refused inside IPv6 (mapped, NAT64, 6to4)", () => {
    fc.assert(
      fc.property(refusedV4.chain((n) => v6CarrierArb(n)), (spelling) => {
        expect(judgeAddress(spelling).allowed).toBe(false);
        expect(refusedByUrl(`http://[${spelling}]/`)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("of a public address is allowed and pinned to its dotted form", () => {
    fc.assert(
      fc.property(publicV4.chain((n) => spellingArb(n).map((s) => [n, s] as const)), ([n, spelling]) => {
        expect(checkOutboundUrl(`http://${spelling}/`).host).toEqual({ kind: "address", address: dotted(n), family: 4 });
        expect(judgeAddress(spelling)).toEqual({ allowed: true, family: 4, address: dotted(n) });
      }),
      { numRuns: 1000 },
    );
  });
});

describe("IPv6 outside global unicast", () => {
  it("is refused whatever the spelling", () => {
    const outside = fc
      .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
      // 2000::/3 is the only range handed out for global unicast.
      .filter((groups) => ((groups[0] ?? 0) & 0xe000) !== 0x2000)
      // IPv4-mapped and NAT64 addresses are judged by the IPv4 address they carry (above).
      .filter((g) => !(g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff))
      .filter((g) => !(g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)));
    fc.assert(
      fc.property(outside, fc.boolean(), (groups, upper) => {
        let text = groups.map((g) => g.toString(16)).join(":");
        if (upper) text = text.toUpperCase();
        expect(judgeAddress(text).allowed).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });
});
