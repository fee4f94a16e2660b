import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { createLogger } from "@intentmesh/telemetry";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../../../test/support/cluster";
import { startRegistryService, type RegistryService } from "../src/service";

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
    const [outbox] = rowsOf<{ n: number }>(await cluster.database.db.execute(sql`select count(distinct msg_id)::int as n, count(*)::int as total from registry.outbox where msg_id like 'agent:race-%'`));
    expect(outbox?.n).toBe(1200);
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
