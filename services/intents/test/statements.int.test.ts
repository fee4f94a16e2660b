import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { intentEventMsgId, intentsCommands as commands } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { agentCaller, startTestCluster, type TestCluster } from "../../../test/support/cluster";
import { commitChangeStatement, selectIntentForWrite } from "../src/kernel/statements";

let cluster: TestCluster;
const agent = agentCaller;

beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("single-statement writes", () => {
  it("refuse a state write checked against leases that changed before it committed", async () => {
    const intent = await cluster.client.request(commands.create, agent("a"), { body: { title: "epoch" } });
    const read = await selectIntentForWrite(cluster.intents.ctx.query, intent.id, "writer");
    expect(read?.leases).toEqual([]);
    // Another agent takes a lease on the part the writer is about to write.
    await cluster.client.request(commands.acquireLease, agent("holder"), { intent_id: intent.id, if_match: null, body: { scope: "plan" } });
    const stale = await commitChangeStatement(
      cluster.intents.ctx.query,
      intent.id,
      { version: 1, leaseEpoch: read!.intent.lease_epoch },
      { state: { plan: "overwritten" } },
      { eventType: "state_patched", actor: "writer", payload: {} },
      new Date(),
    );
    expect(stale).toBeUndefined();
    // Going through the handler, the write is checked again and meets the new lease.
    const error = await cluster.client
      .request(commands.patchState, agent("writer"), { intent_id: intent.id, if_match: 1, patches: [{ op: "set", path: "plan", value: "x" }] })
      .catch((e: { code: string }) => e);
    expect((error as { code: string }).code).toBe("LEASE_HELD");
  });

  it("give each outbox row the catalogue's message id and the event's exact fields", async () => {
    const intent = await cluster.client.request(commands.create, agent("a"), { body: { title: "ids" } });
    await cluster.client.request(commands.appendEvent, agent("a"), { intent_id: intent.id, if_match: null, body: { event_type: "note", payload: { n: 1 } } });
    await cluster.client.request(commands.patchState, agent("a"), { intent_id: intent.id, if_match: 1, patches: [{ op: "set", path: "x", value: 1 }] });
    const rows = rowsOf<{ msg_id: string; payload: string }>(
      await cluster.database.db.execute(sql`select msg_id, payload from intents.outbox where msg_id like ${`intent:${intent.id}:%`} order by id`),
    );
    expect(rows.map((r) => r.msg_id)).toEqual([1, 2, 3].map((n) => intentEventMsgId(intent.id, n)));
    const page = await cluster.client.request(commands.listEvents, agent("a"), { intent_id: intent.id, query: {} });
    expect(rows.map((r) => JSON.parse(r.payload))).toEqual(page.events);
  });
});
