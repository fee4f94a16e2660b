import { describe, expect, it } from "vitest";
import type { Caller } from "@intentmesh/contracts";
import type { LeaseRow } from "../kernel/statements";
import { assertLeasesAllowWrite, assertMayRelease, assertMayRenew, assertMayTakeLease, leaseIsLive } from "./rules";
import { scopeKey } from "./lease-scope";
import { catchError } from "../../../../test/support/errors";

const now = new Date("2026-11-22T10:00:00.000Z");
const lease = (extra: Partial<LeaseRow> = {}): LeaseRow => ({
  id: "0b9a3f1e-2a41-4c8e-9f0b-1c2d3e4f5a6b",
  intentId: "7c1f0e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f",
  agentId: "holder",
  scope: "/plan",
  scopeKey: scopeKey("/plan"),
  acquiredAt: new Date(now.getTime() - 60_000),
  expiresAt: new Date(now.getTime() + 60_000),
  releasedAt: null,
  holdsScope: true,
  endReason: null,
  endedAt: null,
  ...extra,
});
const caller = (actor: string, roles: Caller["roles"] = ["agent"]): Caller => ({ principal: actor, roles, actor, agent_id: actor });
const lapsed = lease({ expiresAt: new Date(now.getTime() - 1) });

describe("who may take, renew and release a lease", () => {
  it("takes leases on open intents only", () => {
    expect(catchError(() => assertMayTakeLease("i", "active"))).toBeUndefined();
    expect(catchError(() => assertMayTakeLease("i", "suspended_awaiting_input"))).toBeUndefined();
    for (const closed of ["completed", "abandoned"]) {
      expect(catchError(() => assertMayTakeLease("i", closed))).toMatchObject({ code: "INTENT_CLOSED", status: 409, details: { status: closed } });
    }
  });

  it("renews only the holder's live, unreleased lease; a suspended intent keeps a lapsed one live", () => {
    expect(catchError(() => assertMayRenew(lease(), "active", caller("holder"), now))).toBeUndefined();
    expect(catchError(() => assertMayRenew(lease(), "active", caller("lead", ["coordinator"]), now))).toMatchObject({ code: "NOT_LEASE_HOLDER", status: 403, details: { holder: "holder" } });
    expect(catchError(() => assertMayRenew(lease({ releasedAt: now, holdsScope: false }), "active", caller("holder"), now))).toMatchObject({ code: "LEASE_RELEASED", status: 412 });
    expect(catchError(() => assertMayRenew(lapsed, "active", caller("holder"), now))).toMatchObject({ code: "LEASE_EXPIRED", status: 412 });
    expect(catchError(() => assertMayRenew(lapsed, "suspended_awaiting_input", caller("holder"), now))).toBeUndefined();
  });

  it("lets the holder, a coordinator or an admin release a lease, and nobody else", () => {
    expect(catchError(() => assertMayRelease(lease(), caller("holder")))).toBeUndefined();
    expect(catchError(() => assertMayRelease(lease(), caller("lead", ["coordinator"])))).toBeUndefined();
    expect(catchError(() => assertMayRelease(lease(), caller("root", ["admin"])))).toBeUndefined();
    expect(catchError(() => assertMayRelease(lease(), caller("other")))).toMatchObject({ code: "NOT_LEASE_HOLDER", status: 403 });
    expect(catchError(() => assertMayRelease(lease(), caller("watcher", ["operator"])))).toMatchObject({ code: "NOT_LEASE_HOLDER" });
  });
});

describe("leases as the authority on writes", () => {
  it("is live while it holds its scope and has not lapsed, or while its intent is suspended", () => {
    expect(leaseIsLive(lease(), "active", now)).toBe(true);
    expect(leaseIsLive(lapsed, "active", now)).toBe(false);
    expect(leaseIsLive(lapsed, "suspended_awaiting_input", now)).toBe(true);
    expect(leaseIsLive(lease({ holdsScope: false }), "suspended_awaiting_input", now)).toBe(false);
  });

  it("refuses a write under another agent's live lease, and the holder's write after its own lease lapsed", () => {
    expect(catchError(() => assertLeasesAllowWrite([lease()], "active", "holder", ["/plan/step"], now))).toBeUndefined();
    expect(catchError(() => assertLeasesAllowWrite([lease()], "active", "other", ["/plan/step"], now))).toMatchObject({ code: "LEASE_HELD", status: 409 });
    expect(catchError(() => assertLeasesAllowWrite([lease()], "active", "other", ["/notes"], now))).toBeUndefined();
    expect(catchError(() => assertLeasesAllowWrite([lapsed], "active", "holder", ["/plan"], now))).toMatchObject({ code: "LEASE_EXPIRED", status: 412 });
    expect(catchError(() => assertLeasesAllowWrite([lease({ releasedAt: now, holdsScope: false })], "active", "holder", ["/plan"], now))).toBeUndefined();
  });
});
