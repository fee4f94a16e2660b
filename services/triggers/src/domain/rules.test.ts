import { describe, expect, it } from "vitest";
import { ScheduleCondition } from "@intentmesh/contracts";
import { afterFiring, checkCron, eventMatches, globMatch, mayOpenAnother, nextDueAfter, parseCondition, render } from "./rules";

const schedule = (c: Record<string, unknown>) => ScheduleCondition.parse(c);
const at = (iso: string) => new Date(iso);
const ANCHOR = at("2026-03-01T00:00:00Z");

describe("cron schedules (RFC-0017 §2)", () => {
  it("fires at the next matching time in the condition's time zone", () => {
    // 09:00 in New York on weekdays; 2026-03-02 is a Monday, EST (UTC-5).
    const c = schedule({ cron: "0 9 * * MON-FRI", timezone: "America/New_York" });
    expect(nextDueAfter(c, at("2026-03-02T00:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-02T14:00:00.000Z");
    // After the US switch to daylight time (2026-03-08), 09:00 is UTC-4.
    expect(nextDueAfter(c, at("2026-03-09T00:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-09T13:00:00.000Z");
    // Friday after 09:00 goes to Monday.
    expect(nextDueAfter(c, at("2026-03-06T15:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-09T13:00:00.000Z");
  });

  it("is strictly after the given time, and UTC by default", () => {
    const c = schedule({ cron: "*/15 * * * *" });
    expect(nextDueAfter(c, at("2026-03-01T10:15:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T10:30:00.000Z");
    expect(nextDueAfter(c, at("2026-03-01T10:14:59Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T10:15:00.000Z");
  });

  it("keeps inside starts_at and ends_at (a time exactly at starts_at counts)", () => {
    const c = schedule({ cron: "0 * * * *", starts_at: "2026-03-01T12:00:00Z", ends_at: "2026-03-01T14:00:00Z" });
    expect(nextDueAfter(c, at("2026-03-01T08:30:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T12:00:00.000Z");
    expect(nextDueAfter(c, at("2026-03-01T13:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T14:00:00.000Z");
    expect(nextDueAfter(c, at("2026-03-01T14:00:00Z"), ANCHOR)).toBeNull();
  });

  it("refuses what is not a 5-field expression or not cron at all, naming the field", () => {
    expect(() => checkCron("0 0 9 * * MON", "UTC")).toThrow(/condition\.cron: .* not a 5-field/);
    expect(() => checkCron("61 * * * *", "UTC")).toThrow(/condition\.cron: .*not a valid cron/);
    expect(() => parseCondition("schedule", { cron: "0 9 * * *", timezone: "Mars/Olympus" })).toThrow(/condition\.timezone: is not an IANA time zone/);
    expect(() => parseCondition("schedule", {})).toThrow(/needs cron, at or interval_seconds/);
    expect(() => parseCondition("schedule", { cron: "* * * * *", interval_seconds: 5 })).toThrow(/one of cron, at and interval_seconds/);
    expect(() => parseCondition("schedule", { cron: "* * * * *", bogus: 1 })).toThrow(/condition/);
    expect(() => parseCondition("event", { filter: {} })).toThrow(/condition\.event/);
  });
});

describe("interval and one-time schedules", () => {
  it("counts intervals from starts_at, else from the anchor (creation)", () => {
    const c = schedule({ interval_seconds: 60 });
    expect(nextDueAfter(c, ANCHOR, ANCHOR)?.toISOString()).toBe("2026-03-01T00:01:00.000Z");
    expect(nextDueAfter(c, at("2026-03-01T00:01:30Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T00:02:00.000Z");
    const s = schedule({ interval_seconds: 60, starts_at: "2026-03-01T05:00:00Z" });
    expect(nextDueAfter(s, ANCHOR, ANCHOR)?.toISOString()).toBe("2026-03-01T05:00:00.000Z");
  });

  it("reads a time without an offset (Python's naive isoformat) as UTC", () => {
    const c = schedule({ at: "2026-03-01T10:00:00", interval_seconds: null });
    expect(nextDueAfter(c, at("2026-03-01T09:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T10:00:00.000Z");
    const w = schedule({ interval_seconds: 3600, starts_at: "2026-03-01T05:00:00" });
    expect(nextDueAfter(w, ANCHOR, ANCHOR)?.toISOString()).toBe("2026-03-01T05:00:00.000Z");
  });

  it("fires `at` once, and `at` wins over cron (§2.3)", () => {
    const c = schedule({ at: "2026-03-01T10:00:00Z", cron: "* * * * *" });
    expect(nextDueAfter(c, at("2026-03-01T09:00:00Z"), ANCHOR)?.toISOString()).toBe("2026-03-01T10:00:00.000Z");
    expect(nextDueAfter(c, at("2026-03-01T10:00:00Z"), ANCHOR)).toBeNull();
  });
});

describe("misfire policy: one firing for all the due times missed", () => {
  it("skips every due time that passed while nothing ran, to the first one after now", () => {
    const c = schedule({ cron: "*/10 * * * *" });
    // Due at 10:00, found at 10:35: 10:10, 10:20, 10:30 are coalesced; the next is 10:40.
    const { next, missed } = afterFiring(c, at("2026-03-01T10:00:00Z"), at("2026-03-01T10:35:00Z"), ANCHOR);
    expect(missed).toBe(3);
    expect(next?.toISOString()).toBe("2026-03-01T10:40:00.000Z");
  });

  it("misses nothing when found on time, and a one-time schedule has no next", () => {
    const c = schedule({ interval_seconds: 30 });
    const { next, missed } = afterFiring(c, at("2026-03-01T00:00:30Z"), at("2026-03-01T00:00:30Z"), ANCHOR);
    expect(missed).toBe(0);
    expect(next?.toISOString()).toBe("2026-03-01T00:01:00.000Z");
    expect(afterFiring(schedule({ at: "2026-03-01T00:00:30Z" }), at("2026-03-01T00:00:30Z"), at("2026-03-01T01:00:00Z"), ANCHOR)).toEqual({ next: null, missed: 0 });
  });
});

describe("event matching (§3)", () => {
  const event = (event_type: string, payload: Record<string, unknown>) => ({ id: "e1", intent_id: "i1", event_type, actor: "a", payload });

  it("answers to the event's own type and the RFC's name for it", () => {
    expect(eventMatches({ event: "intent.created" }, event("intent_created", {}))).toBe(true);
    expect(eventMatches({ event: "intent_created" }, event("intent_created", {}))).toBe(true);
    expect(eventMatches({ event: "intent.resolved" }, event("status_changed", { from: "active", to: "completed" }))).toBe(true);
    expect(eventMatches({ event: "intent.resolved" }, event("status_changed", { from: "draft", to: "active" }))).toBe(false);
    expect(eventMatches({ event: "intent.*" }, event("status_changed", { to: "abandoned" }))).toBe(true);
    expect(eventMatches({ event: "lease.claimed" }, event("state_patched", {}))).toBe(false);
  });

  it("answers agent lifecycle events by the RFC's agent names (§3.2)", () => {
    const lifecycle = (reason: string, previous_status: string, new_status: string) => ({ id: "e2", intent_id: null, event_type: "agent.lifecycle", actor: "registry", payload: { agent_id: "a-1", reason, previous_status, new_status } });
    expect(eventMatches({ event: "agent.registered" }, lifecycle("registered", "registering", "active"))).toBe(true);
    expect(eventMatches({ event: "agent.registered" }, lifecycle("heartbeat_timeout", "active", "unhealthy"))).toBe(false);
    expect(eventMatches({ event: "agent.dead", filter: { agent_id: "a-*" } }, lifecycle("heartbeat_timeout", "unhealthy", "dead"))).toBe(true);
    expect(eventMatches({ event: "agent.status_changed", filter: { from_status: "active", to_status: "draining" } }, lifecycle("drain_initiated", "active", "draining"))).toBe(true);
  });

  it("matches every filter key, exact or glob, with the RFC's derived keys", () => {
    const e = event("status_changed", { from: "active", to: "completed", reason: "billing.done", meta: { region: "eu-west" } });
    expect(eventMatches({ event: "intent.state_changed", filter: { to_state: "completed" } }, e)).toBe(true);
    expect(eventMatches({ event: "intent.state_changed", filter: { to_state: "completed", reason: "billing.*" } }, e)).toBe(true);
    expect(eventMatches({ event: "intent.state_changed", filter: { "meta.region": "eu-*" } }, e)).toBe(true);
    expect(eventMatches({ event: "intent.state_changed", filter: { to_state: "abandoned" } }, e)).toBe(false);
    expect(eventMatches({ event: "intent.state_changed", filter: { missing: "x" } }, e)).toBe(false);
    expect(globMatch("a.*", "a.b.c")).toBe(true);
    expect(globMatch("a.b", "aXb")).toBe(false);
  });
});

describe("templates, deduplication, cascade", () => {
  it("renders {{ trigger.* }} and {{ event.* }}, keeping a lone expression's type, and runs nothing else", () => {
    const vars = { trigger: { trigger_id: "trg_1", fire_count: 3 }, event: { intent_id: "i9" } };
    expect(render({ title: "Run {{ trigger.fire_count }} of {{trigger.trigger_id}}", n: "{{ trigger.fire_count }}", src: "{{ event.intent_id }}", list: ["{{ nope.x }}"], raw: "{{ constructor.constructor }}x" }, vars)).toEqual({
      title: "Run 3 of trg_1",
      n: 3,
      src: "i9",
      list: [null],
      raw: "x",
    });
  });

  it("admits another intent only below the limit (skip and queue default to one open)", () => {
    expect(mayOpenAnother("allow", null, 99)).toBe(true);
    expect(mayOpenAnother("skip", null, 0)).toBe(true);
    expect(mayOpenAnother("skip", null, 1)).toBe(false);
    expect(mayOpenAnother("queue", 3, 2)).toBe(true);
    expect(mayOpenAnother("allow", 2, 2)).toBe(false);
  });
});
