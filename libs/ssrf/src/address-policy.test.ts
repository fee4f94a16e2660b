import { describe, expect, it } from "vitest";
import { RESOLVED_PROBES } from "../test/probes";
import { parseAllowedNetworks, judgeAddress, parseAnyIp } from "./address-policy";

describe("judgeAddress on what a resolver may return", () => {
  it.each(RESOLVED_PROBES)("%s is refused as %s", (address, refusedClass) => {
    expect(judgeAddress(address)).toMatchObject({ allowed: false, refusedClass });
  });

  it.each([
    ["8.8.8.8", 4, "8.8.8.8"],
    ["0x08.0x08.0x08.0x08", 4, "8.8.8.8"],
    ["2606:4700:4700:0000:0000:0000:0000:1111", 6, "2606:4700:4700::1111"],
    ["2606:4700:4700::1111", 6, "2606:4700:4700::1111"],
    ["::ffff:8.8.4.4", 4, "8.8.4.4"],
  ] as const)("%s is allowed and connected to as %s", (address, family, canonical) => {
    expect(judgeAddress(address)).toEqual({ allowed: true, family, address: canonical });
  });

  it("names the refused class in a sentence", () => {
    const verdict = judgeAddress("10.0.0.7");
    expect(verdict.allowed).toBe(false);
    if (!verdict.allowed) expect(verdict.reason).toBe("10.0.0.7 is in 10.0.0.0/8 (private, RFC 1918)");
  });

  it("refuses a zone id even with the loopback allowance", () => {
    expect(judgeAddress("::1%lo", { allowLoopback: true })).toMatchObject({ allowed: false, refusedClass: "zone_id" });
  });

  it("keeps the metadata name ahead of the range it sits in", () => {
    expect(judgeAddress("169.254.169.254", { allowLoopback: true })).toMatchObject({ refusedClass: "metadata" });
    expect(judgeAddress("::ffff:a9fe:a9fe")).toMatchObject({ refusedClass: "metadata" });
  });
});

describe("parseAnyIp", () => {
  it.each([
    ["127.1", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["[::1]", "::1"],
  ])("reads %s as %s", (raw, canonical) => {
    expect(parseAnyIp(raw)?.toString()).toBe(canonical);
  });

  it.each(["peer.example.org", "1.2.3.4.5", "::g", "256.0.0.1x"])("does not take %s for an address", (raw) => {
    expect(parseAnyIp(raw)).toBeNull();
  });
});

describe("an operator's allow-list of networks", () => {
  const policy = { allowedNetworks: parseAllowedNetworks(["127.0.0.1/32", "10.20.0.0/16", "fd00:1::/64"]) };
  it("lets the listed networks through and nothing beside them", () => {
    expect(judgeAddress("127.0.0.1", policy)).toMatchObject({ allowed: true, address: "127.0.0.1" });
    expect(judgeAddress("10.20.3.4", policy)).toMatchObject({ allowed: true });
    expect(judgeAddress("fd00:1::5", policy)).toMatchObject({ allowed: true });
    expect(judgeAddress("::ffff:127.0.0.1", policy)).toMatchObject({ allowed: true, address: "127.0.0.1" });
    expect(judgeAddress("127.0.0.2", policy)).toMatchObject({ allowed: false, refusedClass: "loopback" });
    expect(judgeAddress("10.21.0.1", policy)).toMatchObject({ allowed: false, refusedClass: "private" });
  });
  it("never lets a cloud metadata address through, even when listed", () => {
    const listed = { allowedNetworks: parseAllowedNetworks(["169.254.0.0/16"]) };
    expect(judgeAddress("169.254.169.254", listed)).toMatchObject({ allowed: false, refusedClass: "metadata" });
    expect(judgeAddress("169.254.1.1", listed)).toMatchObject({ allowed: true });
  });
  it("refuses an entry that is not a network, naming it", () => {
    expect(() => parseAllowedNetworks(["10.0.0.0/8", "intranet"])).toThrow(/intranet is not a network/);
    expect(parseAllowedNetworks(["  ", "192.168.1.5"])).toEqual([expect.objectContaining({ cidr: "192.168.1.5/32" })]);
  });
});
