import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { graphCommands, intentsCommands, streams, type IntentEvent } from "@intentmesh/contracts";
import { agentCaller } from "../support/cluster";
import { expectExactlyOnce, openFaultHarness, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test (issue 26): the intents service is killed (SIGKILL) while 12 writers create child
// intents under shared parents (RFC-0002), then started again. Every acknowledged child is stored
// once under its parent, each with its one intent_created event, and the stream carries every
// event of the parents' and children's logs exactly once.
const caller = agentCaller("graph-writer");
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("graph-kill", caller);
});
afterAll(async () => {
  await harness?.close();
});

describe("killing the intents service while children are created", () => {
  it("loses no acknowledged child, stores none twice, and publishes each event exactly once", async () => {
    const { client } = harness;
    await harness.start("intents");
    const parents = await Promise.all(Array.from({ length: 3 }, (_, i) => client.request(intentsCommands.create, caller, { body: { title: `parent ${i}`, status: "active" } })));

    const { acknowledged } = await writeThroughFault({
      workers: 12,
      write: (w, n) => client.request(graphCommands.createChild, caller, { intent_id: parents[(w + n) % parents.length]!.id, body: { title: `child ${w}.${n}`, status: "active" } }),
      fault: () => harness.killAndRestart("intents"),
      until: harness.until,
    });
    await harness.drained("intents");

    const children = await harness.rows<{ id: string; parent_intent_id: string }>(sql`select id, parent_intent_id from intents.intents where parent_intent_id is not null`);
    const parentIds = new Set(parents.map((p) => p.id));
    expect(children.every((c) => parentIds.has(c.parent_intent_id))).toBe(true);
    for (const child of acknowledged) expect(children.find((c) => c.id === child.id)?.parent_intent_id).toBe(child.parent_intent_id);
    const created = await harness.rows<{ intent_id: string }>(sql`select intent_id from intents.events where event_type = 'intent_created' and intent_id in (select id from intents.intents where parent_intent_id is not null)`);
    expectExactlyOnce({
      acknowledged: acknowledged.map((c) => c.id),
      stored: children.map((c) => c.id),
      published: { "intent_created per child": created.map((e) => e.intent_id) },
    });
    const logged = await harness.rows<{ id: string }>(sql`select id from intents.events`);
    expectExactlyOnce({
      acknowledged: [],
      stored: logged.map((e) => e.id),
      published: { [streams.intents.name]: await readStream(harness.bus, harness.bus.streamName(streams.intents.name), (msg) => msg.json<IntentEvent>().id) },
    });
  });
});
