import { describe, expect, it } from "vitest";
import { keysOverlap, leaseState, scopeKey, WHOLE_INTENT_SCOPE } from "./lease-scope";

describe("scopeKey", () => {
  it("maps * (the whole intent) to /", () => {
    expect(WHOLE_INTENT_SCOPE).toBe("*");
    expect(scopeKey("*")).toBe("/");
  });

  it("gives research and /research the same key, with a trailing slash", () => {
    expect(scopeKey("research")).toBe("/research/");
    expect(scopeKey("/research")).toBe(scopeKey("research"));
  });

  it("gives nested paths a key under their parent's", () => {
    expect(scopeKey("research/notes")).toBe("/research/notes/");
    expect(scopeKey("/research/notes").startsWith(scopeKey("research"))).toBe(true);
  });

  it("keeps escapes: a key containing / differs from the two-level path", () => {
    expect(scopeKey("/a~1b")).toBe("/a~1b/");
    expect(scopeKey("/a~1b")).not.toBe(scopeKey("/a/b"));
    expect(keysOverlap(scopeKey("/a~1b"), scopeKey("/a"))).toBe(false);
  });

  it("keeps ~0 escaped and canonical", () => {
    expect(scopeKey("m~0n")).toBe("/m~0n/");
    expect(keysOverlap(scopeKey("/m~0n"), scopeKey("/m"))).toBe(false);
  });

  it("rejects an invalid escape", () => {
    expect(() => scopeKey("/a~2")).toThrow();
  });
});

describe("keysOverlap", () => {
  it("is true when either key is a prefix of the other", () => {
    expect(keysOverlap("/research/", "/research/notes/")).toBe(true);
    expect(keysOverlap("/research/notes/", "/research/")).toBe(true);
    expect(keysOverlap("/research/", "/research/")).toBe(true);
  });

  it("makes the whole-intent scope overlap every scope", () => {
    expect(keysOverlap(scopeKey("*"), scopeKey("research"))).toBe(true);
    expect(keysOverlap(scopeKey("deep/path"), scopeKey("*"))).toBe(true);
  });

  it("does not overlap /research/ and /research2/", () => {
    expect(keysOverlap("/research/", "/research2/")).toBe(false);
    expect(keysOverlap(scopeKey("research2"), scopeKey("research"))).toBe(false);
  });

  it("does not overlap siblings", () => {
    expect(keysOverlap(scopeKey("a/b"), scopeKey("a/c"))).toBe(false);
  });
});

describe("leaseState (spec 2.4)", () => {
  const now = new Date("2026-03-01T12:00:00.000Z");
  const later = new Date(now.getTime() + 1000);
  const earlier = new Date(now.getTime() - 1000);

  it("is RELEASED when releasedAt is set, even if not yet expired", () => {
    expect(leaseState({ releasedAt: earlier, expiresAt: later }, now)).toBe("RELEASED");
  });

  it("is RELEASED when releasedAt is set and it has also expired", () => {
    expect(leaseState({ releasedAt: earlier, expiresAt: earlier }, now)).toBe("RELEASED");
  });

  it("is EXPIRED when expiresAt is in the past", () => {
    expect(leaseState({ releasedAt: null, expiresAt: earlier }, now)).toBe("EXPIRED");
  });

  it("is EXPIRED exactly at expiresAt", () => {
    expect(leaseState({ releasedAt: null, expiresAt: new Date(now.getTime()) }, now)).toBe("EXPIRED");
  });

  it("is ACTIVE before expiresAt", () => {
    expect(leaseState({ releasedAt: null, expiresAt: later }, now)).toBe("ACTIVE");
    expect(leaseState({ releasedAt: null, expiresAt: new Date(now.getTime() + 1) }, now)).toBe("ACTIVE");
  });
});
