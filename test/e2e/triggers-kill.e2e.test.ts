import { type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { streams, systemEventStream, triggersCommands, type Caller } from "@intentmesh/contracts";
import { BusClient, connectBus, type Bus } from "@intentmesh/bus";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import { createTestDatabase, testNamespace } from "../support/backends";
import { killServiceProcess, startServiceProcess, untilHealthy, untilOutboxDrained } from "../support/service-process";

// Fault test (RFC-0017, issue 27): two replicas of the triggers service share a burst of due
// one-time schedules; one is killed (SIGKILL) while they fire and started again. Every due time
// fires exactly once: one firing per trigger, one intent per trigger (whatever the kill cut:
// a claim, an intent creation, the commit after it), one trigger.fired in that intent's log.
const OPERATOR: Caller = { principal: "ops", roles: ["operator"], actor: "ops", agent_id: null };
const ADMIN: Caller = { principal: "admin", roles: ["admin"], actor: "admin", agent_id: null };
const TRIGGERS = 80;
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let namespace: string;
let bus: Bus;
let database: DatabaseHandle;
let intents: IntentsService;
const replicas: (ChildProcess | undefined)[] = [];

const startReplica = () => startServiceProcess("triggers", { DATABASE_URL: testDb.url, NATS_URL: inject("natsUrl"), BUS_NAMESPACE: namespace, TRIGGER_SCHEDULER_INTERVAL_MS: "100" });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  namespace = testNamespace();
  bus = await connectBus(inject("natsUrl"), "triggers-kill-test", namespace);
  database = await openDatabase({ url: testDb.url });
  intents = await startIntentsService({ bus, database, logger: createLogger("test", "silent"), leaseSweepIntervalMs: 3_600_000 });
});
afterAll(async () => {
  for (const replica of replicas) replica?.kill("SIGKILL");
  await intents?.stop();
  for (const name of [systemEventStream.name, streams.intents.name, streams.registry.name, streams.portfolios.name]) {
    await bus?.jsm.streams.delete(bus.streamName(name)).catch(() => undefined);
  }
  await bus?.close();
  await database?.close();
  await testDb?.drop();
});

const count = async (query: ReturnType<typeof sql>) => Number(rowsOf<{ n: string }>(await database.db.execute(query))[0]!.n);

describe("killing a triggers replica during a burst of due schedules", () => {
  it("fires every due time exactly once: no firing lost while it was down, none doubled", async () => {
    const client = new BusClient(bus, 5000);
    replicas[0] = startReplica();
    replicas[1] = startReplica();
    await untilHealthy(client, "triggers", ADMIN);

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
    for (let i = 0; i < 400 && (await created()) < 10; i++) await pause(25);
    const beforeKill = await created();
    await killServiceProcess(replicas[0]!);
    await pause(1000);
    replicas[0] = startReplica();

    for (let i = 0; i < 600 && (await created()) < TRIGGERS; i++) await pause(50);
    expect(beforeKill).toBeGreaterThan(0);
    expect(beforeKill).toBeLessThan(TRIGGERS);

    // One firing per trigger, for its due time, and it created its intent.
    const firings = rowsOf<{ trigger_id: string; status: string; intent_id: string }>(await database.db.execute(sql`select trigger_id, status, intent_id from triggers.firings`));
    expect(firings).toHaveLength(TRIGGERS);
    expect(new Set(firings.map((f) => f.trigger_id))).toEqual(new Set(ids));
    expect(firings.every((f) => f.status === "created")).toBe(true);
    const states = rowsOf<{ enabled: boolean; fire_count: number; next_fire_at: string | null }>(await database.db.execute(sql`select enabled, fire_count, next_fire_at from triggers.triggers`));
    expect(states.every((t) => !t.enabled && t.fire_count === 1 && t.next_fire_at === null)).toBe(true);

    // One intent per trigger, the one its firing names.
    const made = rowsOf<{ id: string; created_by: string }>(await database.db.execute(sql`select id, created_by from intents.intents where created_by like 'trigger:%'`));
    expect(made).toHaveLength(TRIGGERS);
    expect(new Set(made.map((m) => m.created_by.slice("trigger:".length)))).toEqual(new Set(ids));
    expect(new Set(made.map((m) => m.id))).toEqual(new Set(firings.map((f) => f.intent_id)));

    // One trigger.fired in each intent's log, once both replicas' outboxes are relayed.
    await untilOutboxDrained(client, "triggers", ADMIN);
    let fired: { intent_id: string }[] = [];
    for (let i = 0; i < 200; i++) {
      fired = rowsOf<{ intent_id: string }>(await database.db.execute(sql`select intent_id from intents.events where event_type = 'trigger.fired'`));
      if (fired.length >= TRIGGERS) break;
      await pause(50);
    }
    expect(fired).toHaveLength(TRIGGERS);
    expect(new Set(fired.map((f) => f.intent_id))).toEqual(new Set(made.map((m) => m.id)));
  }, 90_000);
});
