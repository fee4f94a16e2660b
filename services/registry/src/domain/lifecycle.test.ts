import { describe, expect, it } from "vitest";
import { AppError } from "@intentmesh/contracts";
import { assertRequestedTransition, drainOutcome, healthOf, nextCheckAt, silenceTransitions, type AgentTimers } from "./lifecycle";

const t0 = new Date("2026-11-22T00:00:00.000Z");
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);
const agent = (over: Partial<AgentTimers> = {}): AgentTimers => ({
  status: "active",
  lastHeartbeatAt: t0,
  unhealthyAfterSeconds: 90,
  deadAfterSeconds: 300,
  drainDeadline: null,
  ...over,
});

describe("silenceTransitions", () => {
  it("keeps an agent active until unhealthy_after_seconds have passed, exactly", () => {
    expect(silenceTransitions(agent(), at(89.999))).toEqual([]);
    expect(silenceTransitions(agent(), at(90))).toEqual([{ from: "active", to: "unhealthy", reason: "heartbeat_timeout" }]);
  });
  it("kills an unhealthy agent at dead_after_seconds, not before", () => {
    expect(silenceTransitions(agent({ status: "unhealthy" }), at(299.999))).toEqual([]);
    expect(silenceTransitions(agent({ status: "unhealthy" }), at(300))).toEqual([{ from: "unhealthy", to: "dead", reason: "heartbeat_timeout" }]);
  });
  it("records both steps when both deadlines have passed", () => {
    expect(silenceTransitions(agent(), at(301)).map((t) => t.to)).toEqual(["unhealthy", "dead"]);
  });
  it("never moves draining, dead or deregistered agents", () => {
    for (const status of ["draining", "dead", "deregistered"] as const) expect(silenceTransitions(agent({ status }), at(10_000))).toEqual([]);
  });
});

describe("drainOutcome", () => {
  const draining = (over: Partial<AgentTimers> = {}) => agent({ status: "draining", drainDeadline: at(120), ...over });
  it("deregisters once no lease is held", () => {
    expect(drainOutcome(draining(), at(1), 0)).toEqual({ transition: { from: "draining", to: "deregistered", reason: "drain_completed" }, warning: false });
  });
  it("waits while leases are held before the deadline", () => {
    expect(drainOutcome(draining(), at(119), 2)).toEqual({ transition: null, warning: false });
  });
  it("at the deadline with work held: dead when silent, deregistered while heartbeating, both with a warning", () => {
    expect(drainOutcome(draining(), at(120), 1)).toEqual({ transition: { from: "draining", to: "dead", reason: "drain_timeout" }, warning: true });
    expect(drainOutcome(draining({ lastHeartbeatAt: at(100) }), at(120), 1)).toEqual({ transition: { from: "draining", to: "deregistered", reason: "drain_timeout" }, warning: true });
  });
});

describe("nextCheckAt", () => {
  it("is the silence deadline of the current status, the earlier of drain deadline and poll, or none", () => {
    expect(nextCheckAt(agent(), t0, 5)).toEqual(at(90));
    expect(nextCheckAt(agent({ status: "unhealthy" }), t0, 5)).toEqual(at(300));
    expect(nextCheckAt(agent({ status: "draining", drainDeadline: at(120) }), t0, 5)).toEqual(at(5));
    expect(nextCheckAt(agent({ status: "draining", drainDeadline: at(3) }), t0, 5)).toEqual(at(3));
    expect(nextCheckAt(agent({ status: "dead" }), t0, 5)).toBeNull();
    expect(nextCheckAt(agent({ status: "deregistered" }), t0, 5)).toBeNull();
  });
});

describe("assertRequestedTransition", () => {
  it("allows a drain from active and unhealthy only", () => {
    expect(() => assertRequestedTransition("a", "active", "draining")).not.toThrow();
    expect(() => assertRequestedTransition("a", "unhealthy", "draining")).not.toThrow();
    for (const from of ["draining", "dead", "deregistered"] as const) {
      const error = (() => {
        try {
          assertRequestedTransition("a", from, "draining");
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(409);
    }
    expect(() => assertRequestedTransition("a", "active", "dead")).toThrow(/cannot be moved to dead/);
  });
});

describe("healthOf (GET /agents/{id}/health)", () => {
  it("is healthy while active and heard from within unhealthy_after_seconds, with both deadlines ahead", () => {
    expect(healthOf(agent(), at(89.5))).toEqual({ status: "active", healthy: true, secondsSinceHeartbeat: 89, unhealthyAt: at(90), deadAt: at(300) });
  });
  it("applies the silence transitions already due, before any sweeper records them", () => {
    expect(healthOf(agent(), at(90))).toMatchObject({ status: "unhealthy", healthy: false, unhealthyAt: null, deadAt: at(300) });
    expect(healthOf(agent(), at(300))).toMatchObject({ status: "dead", healthy: false, unhealthyAt: null, deadAt: null });
  });
  it("a draining or deregistered agent is not healthy and has no silence deadline", () => {
    for (const status of ["draining", "deregistered"] as const) expect(healthOf(agent({ status }), at(1))).toMatchObject({ status, healthy: false, unhealthyAt: null, deadAt: null });
  });
  it("a heartbeat stamped ahead of the server clock reads as zero seconds of silence", () => {
    expect(healthOf(agent({ lastHeartbeatAt: at(10) }), at(0)).secondsSinceHeartbeat).toBe(0);
  });
});
