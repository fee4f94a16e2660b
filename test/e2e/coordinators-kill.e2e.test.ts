import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { AppError, coordinatorCommands, intentEventTypes, intentsCommands, registryCommands, streams, type IntentEvent } from "@intentmesh/contracts";
import { agentCaller } from "../support/cluster";
import { uniqueTag } from "../support/e2e-helpers";
import { expectExactlyOnce, openFaultHarness, writeThroughFault, type FaultHarness } from "../support/fault-harness";
import { readStream } from "../support/service-process";

// Fault test (issue 26, spec 3.4, RFC-0013 5.2): 12 writers record decisions as the intent's
// coordinator while the intents service is killed (SIGKILL); during the outage the coordinator
// agent stops heartbeating and the registry (its own process) declares it dead, so the intents
// service meets the death when it comes back, with decisions still arriving. Exactly one
// successor takes over, every decision answered 201 is in the intent's log exactly once (and on
// the stream once), and no decision of the replaced holder is recorded after the failover.
const admin = agentCaller("coord-kill-admin");
let harness: FaultHarness;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  harness = await openFaultHarness("coordinators-kill", admin);
});
afterAll(async () => {
  await harness?.close();
});

describe("killing the intents service while the coordinator dies", () => {
  it("hands the lease to exactly one successor and records every acknowledged decision exactly once", async () => {
    const { client } = harness;
    await Promise.all([harness.start("registry", { AGENT_SWEEP_INTERVAL_MS: "100" }), harness.start("intents")]);
    const holderId = uniqueTag("coord-holder");
    const successorId = uniqueTag("coord-standby");
    const holder = agentCaller(holderId);
    const successor = agentCaller(successorId);

    // The holder is registered with the shortest silence the registry allows (dead after 4 s) and
    // kept alive by heartbeats until the fault.
    await client.request(registryCommands.register, holder, { body: { agent_id: holderId, heartbeat_config: { interval_seconds: 1, unhealthy_after_seconds: 2, dead_after_seconds: 4 } } });
    let beating = true;
    const heartbeats = (async () => {
      while (beating) {
        await client.request(registryCommands.heartbeat, holder, { agent_id: holderId, body: { status: "active", client_timestamp: new Date().toISOString() } }).catch(() => undefined);
        await sleep(300);
      }
    })();

    const intent = await client.request(intentsCommands.create, admin, { body: { title: "coordinated", status: "active" } });
    const lease = await client.request(coordinatorCommands.createLease, holder, {
      body: { agent_id: holderId, intent_id: intent.id, heartbeat_interval_seconds: 3600, failover_candidates: [successorId] },
    });

    // Each writer decides as the holder until it is refused (NOT_LEASE_HOLDER: the failover
    // happened), then as the successor.
    let replaced = false;
    const refusedHolder: string[] = [];
    const decide = async (w: number, n: number) => {
      const as = replaced ? successor : holder;
      const body = { coordinator_id: as.actor, intent_id: intent.id, decision_type: "task_assigned" as const, summary: `${as.actor} ${w}.${n}`, rationale: "r" };
      try {
        return await client.request(coordinatorCommands.createDecisionRecord, as, { body: body });
      } catch (error) {
        if (error instanceof AppError && error.code === "NOT_LEASE_HOLDER" && as === holder) {
          replaced = true;
          refusedHolder.push(body.summary);
        }
        throw error;
      }
    };

    const { acknowledged, beforeFault } = await writeThroughFault({
      workers: 12,
      write: decide,
      fault: () =>
        harness.killAndRestart("intents", async () => {
          beating = false;
          await harness.until(async () => (await client.request(registryCommands.get, holder, { agent_id: holderId })).status === "dead", 20_000, "the registry to declare the holder dead");
        }),
      until: harness.until,
    });
    await heartbeats;
    expect(beforeFault).toBeGreaterThan(0);
    expect(refusedHolder.length, "the holder was refused once it was replaced").toBeGreaterThan(0);
    await harness.drained("intents");

    // Exactly one successor: two leases, the holder's ended by its death, the successor's holding.
    const leases = await harness.rows<{ id: string; agent_id: string; holds: boolean; end_reason: string | null; predecessor_id: string | null }>(
      sql`select id, agent_id, holds, end_reason, predecessor_id from intents.coordinator_leases where intent_id = ${intent.id} order by granted_at`,
    );
    expect(leases.map((l) => [l.agent_id, l.holds, l.end_reason])).toEqual([
      [holderId, false, "agent_dead"],
      [successorId, true, null],
    ]);
    expect(leases[1]!.predecessor_id).toBe(lease.id);
    const logged = await harness.rows<{ id: string; event_type: string; sequence: string; actor: string }>(
      sql`select id, event_type, sequence, actor from intents.events where intent_id = ${intent.id} order by sequence`,
    );
    const failovers = logged.filter((e) => e.event_type === intentEventTypes.coordinatorFailedOver);
    expect(failovers).toHaveLength(1);

    // Every acknowledged decision stored once and published once; the holder's all before the failover, the successor's after.
    const decisions = logged.filter((e) => e.event_type === intentEventTypes.coordinatorDecision);
    const published = await readStream(harness.bus, harness.bus.streamName(streams.intents.name), (msg) => msg.json<IntentEvent>());
    expectExactlyOnce({
      acknowledged: acknowledged.map((d) => d.id),
      stored: decisions.map((d) => d.id),
      published: { [streams.intents.name]: published.filter((e) => e.intent_id === intent.id && e.event_type === intentEventTypes.coordinatorDecision).map((e) => e.id) },
    });
    // bigint columns come back as text: compared as numbers.
    const failedOverAt = Number(failovers[0]!.sequence);
    expect(decisions.filter((d) => d.actor === holderId).every((d) => Number(d.sequence) < failedOverAt)).toBe(true);
    expect(decisions.filter((d) => d.actor === successorId).every((d) => Number(d.sequence) > failedOverAt)).toBe(true);
    expect(acknowledged.filter((d) => d.coordinator_id === successorId).length).toBeGreaterThan(0);
  });
});
