import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { AppError, intentsCommands as commands, ManualClock } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { agentCaller, startTestCluster, type TestCluster } from "../../../test/support/cluster";
import { LeaseSweeper } from "../src/leases/sweeper";

let cluster: TestCluster;
const agent = agentCaller;

beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const createIntent = () => cluster.client.request(commands.create, agent("creator"), { body: { title: "race", status: "active" } });
const settle = <T>(promises: Promise<T>[]) => Promise.allSettled(promises);
const codeOf = (r: PromiseSettledResult<unknown>) => (r.status === "rejected" ? (r.reason as AppError).code : "OK");

describe("intents over the bus under concurrency", () => {
  it("grants a scope to exactly one of twenty agents racing for it", async () => {
    const intent = await createIntent();
    const results = await settle(
      Array.from({ length: 20 }, (_, i) =>
        cluster.client.request(commands.acquireLease, agent(`racer-${i}`), { intent_id: intent.id, if_match: null, body: { scope: "plan" } }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.filter((r) => codeOf(r) === "LEASE_HELD")).toHaveLength(19);
  });

  it("never grants overlapping scopes to two agents at once", async () => {
    const intent = await createIntent();
    const scopes = ["research", "research/notes", "*", "research/notes/a", "research"];
    const results = await settle(
      scopes.map((scope, i) => cluster.client.request(commands.acquireLease, agent(`overlap-${i}`), { intent_id: intent.id, if_match: null, body: { scope } })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  });

  it("lets exactly one of ten writers holding the same version change the state", async () => {
    const intent = await createIntent();
    const results = await settle(
      Array.from({ length: 10 }, (_, i) =>
        cluster.client.request(commands.patchState, agent(`writer-${i}`), { intent_id: intent.id, if_match: 1, patches: [{ op: "set", path: "winner", value: i }] }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.filter((r) => codeOf(r) === "VERSION_MISMATCH")).toHaveLength(9);
    const after = await cluster.client.request(commands.get, agent("reader"), { intent_id: intent.id });
    expect(after.version).toBe(2);
  });

  it("keeps each intent's event log free of gaps under parallel appends", async () => {
    const intent = await createIntent();
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        cluster.client.request(commands.appendEvent, agent(`logger-${i % 4}`), { intent_id: intent.id, if_match: null, body: { event_type: "note", payload: { i } } }),
      ),
    );
    const rows = rowsOf<{ sequence: number }>(
      await cluster.database.db.execute(sql`select sequence from intents.events where intent_id = ${intent.id} order by sequence`),
    );
    expect(rows.map((r) => Number(r.sequence))).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
  });

  it("expires each due lease exactly once when two sweepers race", async () => {
    const clock = cluster.clock as ManualClock;
    const intents = await Promise.all(Array.from({ length: 8 }, () => createIntent()));
    for (const [i, intent] of intents.entries()) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          cluster.client.request(commands.acquireLease, agent(`sweep-${i}-${j}`), { intent_id: intent.id, if_match: null, body: { scope: `part-${j}`, ttl_seconds: 5 } }),
        ),
      );
    }
    clock.advance(6_000);
    const ctx = cluster.intents.ctx;
    const [a, b] = await Promise.all([new LeaseSweeper(ctx, 1000, 7).sweep(), new LeaseSweeper(ctx, 1000, 7).sweep()]);
    // Between them the two passes may leave a remainder for the next tick, but never double up.
    const third = await new LeaseSweeper(ctx, 1000, 7).sweep();
    expect(a + b + third).toBe(200);
    const ids = intents.map((i) => i.id);
    const expired = rowsOf<{ n: number }>(
      await cluster.database.db.execute(
        sql`select count(*)::int as n from intents.events where event_type = 'lease_released' and payload->>'reason' = 'expired' and intent_id in ${sql.raw(`('${ids.join("','")}')`)}`,
      ),
    );
    expect(expired[0]?.n).toBe(200);
    const distinct = rowsOf<{ n: number }>(
      await cluster.database.db.execute(
        sql`select count(distinct payload->>'lease_id')::int as n from intents.events where event_type = 'lease_released' and payload->>'reason' = 'expired' and intent_id in ${sql.raw(`('${ids.join("','")}')`)}`,
      ),
    );
    expect(distinct[0]?.n).toBe(200);
  });

  it("does not expire the leases of a suspended intent", async () => {
    const clock = cluster.clock as ManualClock;
    const intent = await createIntent();
    const lease = await cluster.client.request(commands.acquireLease, agent("patient"), { intent_id: intent.id, if_match: null, body: { scope: "*", ttl_seconds: 5 } });
    await cluster.database.db.execute(sql`update intents.intents set status = 'suspended_awaiting_input' where id = ${intent.id}`);
    clock.advance(10_000);
    await cluster.intents.sweeper.sweep();
    const leases = await cluster.client.request(commands.listLeases, agent("patient"), { intent_id: intent.id, query: {} });
    expect(leases.leases[0]?.id).toBe(lease.id);
    const [row] = rowsOf<{ holds_scope: boolean }>(await cluster.database.db.execute(sql`select holds_scope from intents.leases where id = ${lease.id}`));
    expect(row?.holds_scope).toBe(true);
    const renewed = await cluster.client.request(commands.renewLease, agent("patient"), { intent_id: intent.id, if_match: null, lease_id: lease.id, body: { ttl_seconds: 60 } });
    expect(new Date(renewed.expires_at).getTime()).toBeGreaterThan(clock.now().getTime());
  });

  it("rejects a command whose input does not match its contract, with the zod issues", async () => {
    const error = await cluster.client.request(commands.create, agent("x"), { body: { title: "" } } as never).catch((e: AppError) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(400);
    expect((error as AppError).details.issues).toBeInstanceOf(Array);
  });
});
