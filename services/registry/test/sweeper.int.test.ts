import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import { streams, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../../../test/support/cluster";
import { readStream } from "../../../test/support/service-process";
import { startRegistryService, type RegistryService } from "../src/service";
import { AgentSweeper } from "../src/sweeper";

let cluster: TestCluster;
let second: RegistryService;
beforeAll(async () => {
  cluster = await startTestCluster();
  second = await startRegistryService({ bus: cluster.bus, database: cluster.database, logger: createLogger("replica", "silent"), clock: cluster.clock, sweepIntervalMs: 3_600_000 });
});
afterAll(async () => {
  await second?.stop();
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;

async function registerMany(prefix: string, n: number) {
  for (let i = 0; i < n; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, j) =>
        cluster.api("/agents", { body: { agent_id: `${prefix}-${i + j}`, heartbeat_config: { interval_seconds: 5, unhealthy_after_seconds: 10, dead_after_seconds: 20 } }, key: "agent" }),
      ),
    );
  }
}

describe("two registry replicas sweeping at once", () => {
  it("make each transition exactly once", async () => {
    await registerMany("race", 400);
    clock().advance(10_000);
    const [a, b] = await Promise.all([cluster.registry.sweeper.sweep(), second.sweeper.sweep()]);
    expect(a + b).toBe(400);
    clock().advance(10_000);
    const [c, d] = await Promise.all([cluster.registry.sweeper.sweep(), second.sweeper.sweep()]);
    expect(c + d).toBe(400);

    const rows = rowsOf<{ agent_id: string; status: string; version: number; transitions: number; sequences: number; max_seq: number }>(
      await cluster.database.db.execute(sql`
        select a.agent_id, a.status, a.version,
          count(*) filter (where e.event_type = 'agent.lifecycle')::int as transitions,
          count(distinct e.sequence)::int as sequences, max(e.sequence)::int as max_seq
        from registry.agents a join registry.agent_events e using (agent_id)
        where a.agent_id like 'race-%' group by a.agent_id, a.status, a.version`),
    );
    expect(rows).toHaveLength(400);
    for (const row of rows) {
      expect(row).toMatchObject({ status: "dead", version: 3, transitions: 3, sequences: 3, max_seq: 3 });
    }
    // Each transition's message was published under a message id of its own (the relay deletes the outbox rows it publishes).
    const raceMessages = async () =>
      new Set((await readStream(cluster.bus, cluster.bus.streamName(streams.registry.name), (msg) => msg.headers?.get("Nats-Msg-Id") ?? "")).filter((id) => id.startsWith("agent:race-"))).size;
    await vi.waitFor(async () => expect(await raceMessages()).toBe(1200), { timeout: 20_000 });
  });

  it("reads only agents that are due: a tick with nothing due claims nothing", async () => {
    await registerMany("idle", 50);
    expect(await cluster.registry.sweeper.sweep()).toBe(0);
    // The due query can be answered from the partial index alone (on a table this small the
    // planner would rather scan, so scanning is switched off to ask whether the index serves it).
    const plan = await cluster.database.db.transaction(async (tx) => {
      await tx.execute(sql`set local enable_seqscan = off`);
      return rowsOf<{ "QUERY PLAN": string }>(
        await tx.execute(sql`explain select * from registry.agents where next_check_at is not null and next_check_at <= now() order by next_check_at limit 1000 for update skip locked`),
      ).map((r) => r["QUERY PLAN"]).join("\n");
    });
    expect(plan).toContain("agents_due_idx");
  });
});

describe("the sweeper and a slow or absent intents service (drain checks)", () => {
  const config = { interval_seconds: 5, unhealthy_after_seconds: 10, dead_after_seconds: 20 };
  const register = async (id: string) => expect((await cluster.api("/agents", { body: { agent_id: id, heartbeat_config: config }, key: "agent" })).status).toBe(201);
  const drain = async (id: string) => expect((await cluster.api(`/agents/${id}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": "1" }, key: "agent" })).status).toBe(200);
  const status = async (id: string) => (await cluster.api(`/agents/${id}`, { key: "agent" })).body.status as string;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** A sweeper of the main replica's context whose bus requests to the intents service go to `request`. */
  const sweeperWith = (request: (...args: unknown[]) => Promise<unknown>, batchSize?: number) =>
    new AgentSweeper({ ...cluster.registry.ctx, client: { request } as never }, 3_600_000, batchSize);

  it("counts leases before locking: a heartbeat of a due agent never waits for the intents service", async () => {
    const [draining, beating] = ["slow-draining", "slow-beating"];
    await register(draining);
    await register(beating);
    await drain(draining);
    clock().advance(10_000); // both due: the drain check, and the silence deadline of the other
    const sweeper = sweeperWith(async (_subject, _caller, input) => {
      await sleep(2500);
      return { held: Object.fromEntries((input as { agent_ids: string[] }).agent_ids.map((id) => [id, 1])) };
    });
    const sweeping = sweeper.sweep();
    await sleep(300);
    const started = Date.now();
    const beat = await cluster.api(`/agents/${beating}/heartbeat`, { body: { status: "active", client_timestamp: clock().now().toISOString() }, key: "agent" });
    const waited = Date.now() - started;
    expect(beat.status).toBe(200);
    expect(waited).toBeLessThan(1000);
    await sweeping;
    expect(await status(beating)).toBe("active");
    expect(await status(draining)).toBe("draining");
  });

  it("with the intents service away, a sweep ends, postpones the drain checks, and still moves the agents behind them", async () => {
    const [d1, d2, silent] = ["away-d1", "away-d2", "away-silent"];
    for (const id of [silent, d1, d2]) await register(id);
    await drain(d1);
    await drain(d2);
    clock().advance(10_000); // the drain checks are due first (at +5 s), then the silent agent (at +10 s)
    const sweeper = sweeperWith(async () => {
      throw new Error("no responders");
    }, 2);
    const outcome = await Promise.race([sweeper.sweep().then(() => "done"), sleep(5000).then(() => "stuck")]);
    expect(outcome).toBe("done");
    expect(await status(silent)).toBe("unhealthy");
    expect([await status(d1), await status(d2)]).toEqual(["draining", "draining"]);
    const [row] = rowsOf<{ postponed: boolean }>(await cluster.database.db.execute(sql`select next_check_at > ${clock().now()} as postponed from registry.agents where agent_id = ${d1}`));
    expect(row?.postponed).toBe(true);
  });
});
