import { describe, expect, it } from "vitest";
import type { Caller } from "@intentmesh/contracts";
import { assertExpiryAhead, assertPermission, assertRequestsForItself, atLeast, permissionOf, type AclHead, type EntryFacts } from "./rules";
import { catchError } from "../../../../test/support/errors";

const now = new Date("2026-11-22T10:00:00.000Z");
const caller = (principal: string, extra: Partial<Caller> = {}): Caller => ({ principal, roles: ["agent"], actor: principal, agent_id: null, ...extra });
const closed: AclHead = { policy: "closed", defaultPermission: "read", owner: "alice" };
const open: AclHead = { policy: "open", defaultPermission: "read", owner: "alice" };
const entry = (extra: Partial<EntryFacts>): EntryFacts => ({ principalType: "agent", principalId: "bot", permission: "write", expiresAt: null, ...extra });

describe("the permission a caller holds (RFC-0011)", () => {
  it("is everything on an intent without an ACL, as before", () => {
    expect(permissionOf({ policy: null, defaultPermission: null, owner: null }, [], caller("anyone"), now)).toBe("admin");
  });

  it("is admin for admin keys and for the ACL's owner, whatever the entries", () => {
    expect(permissionOf(closed, [], caller("root", { roles: ["admin"] }), now)).toBe("admin");
    expect(permissionOf(closed, [], caller("alice"), now)).toBe("admin");
    // The owner is the key's principal, not a name in X-Agent-ID.
    expect(permissionOf(closed, [], caller("mallory", { actor: "alice", agent_id: "alice" }), now)).toBeNull();
  });

  it("is nothing under a closed policy without an entry, the default under an open one", () => {
    expect(permissionOf(closed, [], caller("bob"), now)).toBeNull();
    expect(permissionOf(open, [], caller("bob"), now)).toBe("read");
    expect(permissionOf({ ...open, defaultPermission: "write" }, [], caller("bob"), now)).toBe("write");
  });

  it("matches agent entries on the acting agent, user entries on the key's principal, group entries on a role", () => {
    const entries = [entry({ principalType: "agent", principalId: "bot", permission: "write" })];
    expect(permissionOf(closed, entries, caller("key-1", { actor: "bot", agent_id: "bot" }), now)).toBe("write");
    expect(permissionOf(closed, entries, caller("bot-owner"), now)).toBeNull();
    expect(permissionOf(closed, [entry({ principalType: "user", principalId: "key-1", permission: "read" })], caller("key-1", { actor: "bot", agent_id: "bot" }), now)).toBe("read");
    // A user entry does not match an agent that merely carries the name.
    expect(permissionOf(closed, [entry({ principalType: "user", principalId: "bot" })], caller("key-1", { actor: "bot", agent_id: "bot" }), now)).toBeNull();
    expect(permissionOf(closed, [entry({ principalType: "group", principalId: "operator", permission: "admin" })], caller("op", { roles: ["operator"] }), now)).toBe("admin");
    expect(permissionOf(closed, [entry({ principalType: "group", principalId: "operator" })], caller("ag"), now)).toBeNull();
  });

  it("takes the highest of the matching entries and the open default", () => {
    const who = caller("key-1", { actor: "bot", agent_id: "bot" });
    const entries = [entry({ permission: "read" }), entry({ principalType: "user", principalId: "key-1", permission: "admin" })];
    expect(permissionOf(closed, entries, who, now)).toBe("admin");
    expect(permissionOf({ ...open, defaultPermission: "write" }, [entry({ permission: "read" })], who, now)).toBe("write");
  });

  it("ignores an entry from its expires_at on", () => {
    const who = caller("k", { actor: "bot", agent_id: "bot" });
    expect(permissionOf(closed, [entry({ expiresAt: new Date(now.getTime() + 1) })], who, now)).toBe("write");
    expect(permissionOf(closed, [entry({ expiresAt: now })], who, now)).toBeNull();
    expect(permissionOf(open, [entry({ expiresAt: new Date(now.getTime() - 1) })], who, now)).toBe("read");
  });

  it("orders the levels read < write < admin", () => {
    expect(atLeast("admin", "write")).toBe(true);
    expect(atLeast("write", "write")).toBe(true);
    expect(atLeast("read", "write")).toBe(false);
    expect(atLeast(null, "read")).toBe(false);
  });

  it("refuses with 403 INTENT_ACCESS_DENIED naming what is held and needed", () => {
    const error = catchError(() => assertPermission("i-1", open, [], caller("bob"), "write", now)) as { code: string; status: number; details: Record<string, unknown> };
    expect(error).toMatchObject({ code: "INTENT_ACCESS_DENIED", status: 403, details: { intent_id: "i-1", needed: "write", held: "read" } });
    expect(assertPermission("i-1", open, [], caller("bob"), "read", now)).toBe("read");
  });
});

describe("access requests and expiries", () => {
  it("are asked by the principal they name", () => {
    const who = caller("key-1", { actor: "bot", agent_id: "bot" });
    expect(catchError(() => assertRequestsForItself(who, "agent", "bot"))).toBeUndefined();
    expect(catchError(() => assertRequestsForItself(who, "user", "key-1"))).toBeUndefined();
    expect(catchError(() => assertRequestsForItself(who, "agent", "other"))).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(catchError(() => assertRequestsForItself(who, "group", "admin"))).toMatchObject({ code: "FORBIDDEN" });
  });

  it("refuses an expiry that is not ahead", () => {
    expect(catchError(() => assertExpiryAhead(new Date(now.getTime() + 1000), now))).toBeUndefined();
    expect(catchError(() => assertExpiryAhead(null, now))).toBeUndefined();
    expect(catchError(() => assertExpiryAhead(now, now))).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
  });
});
