import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { intentsCommands, streams, type IntentEvent } from "@intentmesh/contracts";
import { agentCaller } from "../support/cluster";
import { expectExactlyOnce, openFaultHarness, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test: the intents service process is killed (SIGKILL) while writes are in flight, then
// started again. Every write it acknowledged is in the log, each intent's log has no gap, and
// every event reaches the stream exactly once.
const caller = agentCaller("writer");
let harness: FaultHarness;

beforeAll(async () => {
  harness = await openFaultHarness("intents-kill", caller);
});
afterAll(async () => {
  await harness?.close();
});

describe("killing the intents service mid-flight", () => {
  it("loses no acknowledged write and publishes every event exactly once", async () => {
    const { client } = harness;
    await harness.start("intents");
    const intents = await Promise.all(Array.from({ length: 4 }, (_, i) => client.request(intentsCommands.create, caller, { body: { title: `kill ${i}`, status: "active" } })));

    const { acknowledged } = await writeThroughFault({
      workers: 16,
      write: (w, n) => client.request(intentsCommands.appendEvent, caller, { intent_id: intents[(w + n) % intents.length]!.id, if_match: null, body: { event_type: "work", payload: { w, n } } }),
      fault: () => harness.killAndRestart("intents"),
      until: harness.until,
    });
    // The restarted relay drains what the killed one left.
    await harness.drained("intents");

    const logged = await harness.rows<{ id: string; intent_id: string; sequence: string }>(sql`select id, intent_id, sequence from intents.events order by intent_id, sequence`);
    for (const intent of intents) {
      const sequences = logged.filter((e) => e.intent_id === intent.id).map((e) => Number(e.sequence));
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1));
    }
    expectExactlyOnce({
      acknowledged: acknowledged.map((e: IntentEvent) => e.id),
      stored: logged.map((e) => e.id),
      published: { [streams.intents.name]: await readStream(harness.bus, harness.bus.streamName(streams.intents.name), (msg) => msg.json<IntentEvent>().id) },
    });
  });
});
