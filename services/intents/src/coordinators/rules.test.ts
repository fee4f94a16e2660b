import { describe, expect, it } from "vitest";
import type { AppError, Caller } from "@intentmesh/contracts";
import { assertNoLiveHolder, assertNotPaused, mergePatch, supervises, expiryAfter, isLive, leaseStatus, nextCandidate, toCoordinatorLease, type CoordinatorLeaseRow } from "./rules";

const t0 = new Date("2026-11-25T10:00:00.000Z");
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
const lease = (extra: Partial<CoordinatorLeaseRow> = {}): CoordinatorLeaseRow => ({
  id: "00000000-0000-4000-8000-0000000000c1",
  intentId: "00000000-0000-4000-8000-0000000000a1",
  agentId: "coord-1",
  supervisorId: "lead",
  coordinatorType: "llm",
  guardrails: null,
  metadata: {},
  heartbeatIntervalSeconds: 60,
  failoverCandidates: [],
  holds: true,
  grantedAt: t0,
  lastHeartbeat: t0,
  expiresAt: expiryAfter(t0, 60),
  endedAt: null,
  endReason: null,
  predecessorId: null,
  version: 1,
  pausedAt: null,
  pausedBy: null,
  pauseReason: null,
  stallReportedAt: null,
  consecutiveFailures: 0,
  ...extra,
});

describe("coordinator leases (RFC-0013)", () => {
  it("a paused lease answers paused while live, unresponsive once past its expiry, and refuses its holder's work (409)", () => {
    const paused = lease({ pausedAt: at(10), pausedBy: "lead", pauseReason: "review" });
    expect(leaseStatus(paused, at(30))).toBe("paused");
    expect(leaseStatus(paused, at(121))).toBe("unresponsive");
    expect(toCoordinatorLease(paused, at(30))).toMatchObject({ status: "paused", paused_by: "lead", pause_reason: "review" });
    expect(() => assertNotPaused(paused)).toThrow(expect.objectContaining({ code: "COORDINATOR_PAUSED" }));
    expect(() => assertNotPaused(lease())).not.toThrow();
  });

  it("hold for two heartbeat intervals after the last heartbeat, on the server clock", () => {
    expect(expiryAfter(t0, 60)).toEqual(at(120));
    expect(isLive(lease(), at(119))).toBe(true);
    expect(isLive(lease(), at(120))).toBe(false);
    expect(leaseStatus(lease(), at(60))).toBe("active");
    expect(leaseStatus(lease(), at(121))).toBe("unresponsive");
    expect(leaseStatus(lease({ holds: false }), at(1))).toBe("failed_over");
  });

  it("refuse a second holder while the first is live, naming the lease (the client's LeaseConflictError) and carrying it", () => {
    let error: AppError | undefined;
    try {
      assertNoLiveHolder("i", lease(), at(10));
    } catch (e) {
      error = e as AppError;
    }
    expect(error?.code).toBe("COORDINATOR_LEASE_HELD");
    expect(error?.status).toBe(409);
    expect(error?.message).toContain("lease");
    expect(error?.extra).toMatchObject({ existing_lease: { id: lease().id, agent_id: "coord-1", status: "active" } });
    expect(() => assertNoLiveHolder("i", lease(), at(120))).not.toThrow();
    expect(() => assertNoLiveHolder("i", undefined, at(0))).not.toThrow();
  });

  it("fail over to the first candidate that is neither the dead agent nor reported dead or deregistered", () => {
    const statuses = new Map([
      ["b", "dead"],
      ["c", "deregistered"],
      ["d", "active"],
    ]);
    expect(nextCandidate(["a", "b", "c", "d", "e"], "a", statuses)).toEqual({ agentId: "d", rest: ["e"] });
    // An agent the registry never reported on (a standalone agent) counts as alive.
    expect(nextCandidate(["x"], "a", statuses)).toEqual({ agentId: "x", rest: [] });
    expect(nextCandidate(["b", "c"], "a", statuses)).toBeUndefined();
    expect(nextCandidate([], "a", statuses)).toBeUndefined();
  });

  it("answer the client's CoordinatorLease shape", () => {
    expect(toCoordinatorLease(lease(), at(1))).toMatchObject({
      role: "coordinator",
      scope: "intent",
      portfolio_id: null,
      status: "active",
      heartbeat_interval_seconds: 60,
      last_heartbeat: "2026-11-25T10:00:00.000+00:00",
      expires_at: "2026-11-25T10:02:00.000+00:00",
      version: 1,
    });
  });
});

describe("supervision (RFC-0013 2.1)", () => {
  const caller = (actor: string, role: Caller["roles"][number]): Caller => ({ principal: role, roles: [role], actor, agent_id: actor });
  it("a lease's supervisor is its supervisor_id agent, admin and coordinator keys; never its holder unless with an admin key", () => {
    const row = lease();
    expect(supervises(row, caller("lead", "agent"))).toBe(true);
    expect(supervises(row, caller("someone", "agent"))).toBe(false);
    expect(supervises(row, caller("someone", "coordinator"))).toBe(true);
    expect(supervises(row, caller("coord-1", "agent"))).toBe(false);
    expect(supervises(row, caller("coord-1", "coordinator"))).toBe(false);
    expect(supervises(row, caller("coord-1", "admin"))).toBe(true);
    expect(supervises(lease({ supervisorId: null }), caller("lead", "agent"))).toBe(false);
  });
  it("guardrails are patched as a JSON merge patch (RFC 7396): sections merge, null removes, arrays replace", () => {
    const stored = { max_budget_usd: 5, scope: { max_concurrent_tasks: 1, allowed_capabilities: ["a", "b"] }, custom: "kept" };
    expect(mergePatch(stored, { max_budget_usd: null, scope: { max_concurrent_tasks: 3, allowed_capabilities: ["c"] }, review: { requires_plan_review: true } })).toEqual({
      scope: { max_concurrent_tasks: 3, allowed_capabilities: ["c"] },
      custom: "kept",
      review: { requires_plan_review: true },
    });
    expect(mergePatch(stored, { scope: null })).toEqual({ max_budget_usd: 5, custom: "kept" });
    expect(stored.scope.max_concurrent_tasks).toBe(1);
  });
});
