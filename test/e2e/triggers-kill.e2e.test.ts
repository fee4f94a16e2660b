import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { triggersCommands, type Caller } from "@intentmesh/contracts";
import { openFaultHarness, rowsWhenCaughtUp, type FaultHarness } from "../support/fault-harness";

// Fault test (RFC-0017, issue 27): two replicas of the triggers service share a burst of due
// one-time schedules; one is killed (SIGKILL) while they fire and started again. Every due time
// fires exactly once: one firing per trigger, one intent per trigger (whatever the kill cut:
// a claim, an intent creation, the commit after it), one trigger.fired in that intent's log.
const OPERATOR: Caller = { principal: "ops", roles: ["operator"], actor: "ops", agent_id: null };
const ADMIN: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };
const TRIGGERS = 80;
const SCHEDULER = { TRIGGER_SCHEDULER_INTERVAL_MS: "100" };
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("triggers-kill", ADMIN, { busTimeoutMs: 5000 });
});
afterAll(async () => {
  await harness?.close();
});

const count = async (query: ReturnType<typeof sql>) => Number((await harness.rows<{ n: string }>(query))[0]!.n);

describe("killing a triggers replica during a burst of due schedules", () => {
  it("fires every due time exactly once: no firing lost while it was down, none doubled", async () => {
    const { client } = harness;
    await Promise.all([harness.start("intents"), harness.start("triggers", SCHEDULER, 0), harness.start("triggers", SCHEDULER, 1)]);

    // 80 one-time schedules, due every 50 ms from 4 s from now: the burst spans about 4 s.
    const start = Date.now() + 4000;
    const created_ = await Promise.all(
      Array.from({ length: TRIGGERS }, (_, i) =>
        client.request(triggersCommands.create, OPERATOR, { body: { name: `burst-${i}`, type: "schedule", condition: { at: new Date(start + i * 50).toISOString() }, intent_template: { title: `burst ${i}` } } }),
      ),
    );
    const ids = created_.map((t) => t.trigger_id);
    expect(created_.every((t) => t.next_fire_at !== null)).toBe(true);

    // Kill one replica once firing is under way, and keep it down for a second of due times.
    const created = () => count(sql`select count(*) as n from triggers.firings where status = 'created'`);
    await harness.until(async () => (await created()) >= 10, 10_000, "firing to be under way");
    const beforeKill = await created();
    await harness.killAndRestart("triggers", 1000, 0);
    await harness.until(async () => (await created()) >= TRIGGERS, 30_000, "every due time to fire").catch(() => undefined); // the counts below say what is missing
    expect(beforeKill).toBeGreaterThan(0);
    expect(beforeKill).toBeLessThan(TRIGGERS);

    // One firing per trigger, for its due time, and it created its intent.
    const firings = await harness.rows<{ trigger_id: string; status: string; intent_id: string }>(sql`select trigger_id, status, intent_id from triggers.firings`);
    expect(firings).toHaveLength(TRIGGERS);
    expect(new Set(firings.map((f) => f.trigger_id))).toEqual(new Set(ids));
    expect(firings.every((f) => f.status === "created")).toBe(true);
    const states = await harness.rows<{ enabled: boolean; fire_count: number; next_fire_at: string | null }>(sql`select enabled, fire_count, next_fire_at from triggers.triggers`);
    expect(states.every((t) => !t.enabled && t.fire_count === 1 && t.next_fire_at === null)).toBe(true);

    // One intent per trigger, the one its firing names.
    const made = await harness.rows<{ id: string; created_by: string }>(sql`select id, created_by from intents.intents where created_by like 'trigger:%'`);
    expect(made).toHaveLength(TRIGGERS);
    expect(new Set(made.map((m) => m.created_by.slice("trigger:".length)))).toEqual(new Set(ids));
    expect(new Set(made.map((m) => m.id))).toEqual(new Set(firings.map((f) => f.intent_id)));

    // One trigger.fired in each intent's log, once both replicas' outboxes are relayed.
    await harness.drained("triggers");
    const fired = await rowsWhenCaughtUp<{ intent_id: string }>(harness, sql`select intent_id from intents.events where event_type = 'trigger.fired'`, TRIGGERS);
    expect(fired).toHaveLength(TRIGGERS);
    expect(new Set(fired.map((f) => f.intent_id))).toEqual(new Set(made.map((m) => m.id)));
  }, 90_000);
});
