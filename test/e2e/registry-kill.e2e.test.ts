import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentEventMsgId, agentEventTypes, streams, type AgentEvent, type AgentStatus } from "@intentmesh/contracts";
import { createLogger } from "@intentmesh/telemetry";
import { sql } from "drizzle-orm";
import { agentCaller, startTestGateway, type ApiResponse, type TestCluster, type TEST_KEYS } from "../support/cluster";
import { openFaultHarness, type FaultHarness } from "../support/fault-harness";
import { uniqueTag } from "../support/e2e-helpers";
import { readStream } from "../support/service-process";
import type { Gateway } from "../../services/gateway/src/app";

// Fault test: the registry service process is killed (SIGKILL) while clients register and drain
// agents through the gateway, then started again. Every registration and drain it acknowledged
// is in the registry, each agent's log has no gap, every event reaches the stream exactly once,
// and the intents service's projection of agent statuses catches up with every agent's log.
const caller = agentCaller("registry-kill");
let harness: FaultHarness;
let gateway: Gateway | undefined;
let api: TestCluster["api"];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until: FaultHarness["until"] = (...args) => harness.until(...args);

/** Where an agent's status stands on its way: a status "at or past" another has this rank or more. */
const RANK: Record<AgentStatus, number> = { registering: 0, active: 1, unhealthy: 1, draining: 2, dead: 3, deregistered: 3 };

type Key = keyof typeof TEST_KEYS;
interface Tracked {
  key: Key;
  /** The latest status a 2xx answer acknowledged; undefined while none did (the write may still have committed). */
  acknowledged?: "active" | "draining";
}

beforeAll(async () => {
  harness = await openFaultHarness("registry-kill", caller);
  // Requests the killed registry never answers time out quickly; with no registry at all they are 503 at once.
  ({ gateway, api } = await startTestGateway(harness.bus, createLogger("test", "silent"), { busTimeoutMs: 1500 }));
});
afterAll(async () => {
  await gateway?.stop();
  await harness?.close();
});

describe("killing the registry service mid-flight", () => {
  it("loses no acknowledged registration or drain, and its logs, stream and the intents projection agree", async () => {
    // The sweeper stays out of the way: nothing goes silent or finishes draining during the test.
    await Promise.all([harness.start("registry", { AGENT_SWEEP_INTERVAL_MS: "3600000" }), harness.start("intents")]);

    const tag = uniqueTag("rk");
    const agents = new Map<string, Tracked>();
    let acknowledgedWrites = 0;
    let outageAnswers = 0;
    const unexpected: string[] = [];
    let writing = true;

    /**
     * Sends until the registry answers. 503/504 (the registry is down, or died holding the request)
     * are retried; once a retry has been needed, `doneCodes` (409) say an earlier attempt committed
     * without its answer reaching the client: done, but not acknowledged. Anything else is a failure.
     */
    const send = async (what: string, request: () => Promise<ApiResponse>, ...doneCodes: string[]): Promise<boolean> => {
      let retried = false;
      const deadline = Date.now() + 20_000;
      for (;;) {
        const res = await request();
        if (res.status >= 200 && res.status < 300) {
          acknowledgedWrites += 1;
          return true;
        }
        if (retried && res.status === 409 && doneCodes.includes(res.body?.code)) return false;
        if ((res.status !== 503 && res.status !== 504) || Date.now() > deadline) {
          unexpected.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
          return false;
        }
        outageAnswers += 1;
        retried = true;
        await sleep(20);
      }
    };

    // Client w registers agents with its own key (two agent keys); of each three agents, one stays
    // active, one is drained by itself and one by a coordinator (which also queues a drain command).
    const clients = Array.from({ length: 8 }, async (_, w) => {
      const key: Key = w % 2 ? "other" : "agent";
      for (let n = 0; writing; n++) {
        const id = `${tag}-${w}-${n}`;
        const tracked: Tracked = { key };
        agents.set(id, tracked);
        if (await send(`register ${id}`, () => api("/agents", { body: { agent_id: id, capabilities: ["kill"] }, key }), "AGENT_ALREADY_REGISTERED")) {
          tracked.acknowledged = "active";
        }
        if (n % 3 === 0) continue;
        const drainKey: Key = n % 3 === 1 ? key : "coordinator";
        if (
          await send(
            `drain ${id}`,
            () => api(`/agents/${id}/status`, { method: "PATCH", body: { status: "draining" }, headers: { "If-Match": "1" }, key: drainKey }),
            // A drain that committed before its answer was lost moved the version on: the retry's
            // If-Match is stale (checked before the transition).
            "INVALID_AGENT_TRANSITION",
            "VERSION_MISMATCH",
          )
        ) {
          tracked.acknowledged = "draining";
        }
      }
    });

    await until(() => acknowledgedWrites >= 60, 15_000, "writes before the kill");
    const beforeKill = acknowledgedWrites;
    await harness.killAndRestart("registry", () => until(() => outageAnswers > 0, 5_000, "clients to see the registry gone"));
    const afterRestart = acknowledgedWrites;
    await until(() => acknowledgedWrites >= afterRestart + 40, 15_000, "writes after the restart");
    writing = false;
    await Promise.all(clients);
    expect(unexpected).toEqual([]);
    expect(beforeKill).toBeGreaterThan(0);
    expect(acknowledgedWrites).toBeGreaterThan(afterRestart);
    expect(outageAnswers).toBeGreaterThan(0);

    // The restarted relay drains what the killed one left.
    await harness.drained("registry");

    // 1 and 2: every agent is there at or past its acknowledged status, and its log runs 1..n.
    const ids = [...agents.keys()];
    const logs = new Map<string, AgentEvent[]>();
    const problems: string[] = [];
    for (let i = 0; i < ids.length; i += 16) {
      await Promise.all(
        ids.slice(i, i + 16).map(async (id) => {
          const { key, acknowledged } = agents.get(id)!;
          const record = await api(`/agents/${id}`, { key });
          if (record.status !== 200) return void problems.push(`GET ${id}: ${record.status} ${JSON.stringify(record.body)}`);
          const status = record.body.status as AgentStatus;
          if (acknowledged && !(RANK[status] >= RANK[acknowledged])) problems.push(`${id}: acknowledged ${acknowledged}, record says ${status}`);
          const page = await api(`/agents/${id}/events?limit=1000`, { key });
          if (page.status !== 200 || page.body.has_more) return void problems.push(`events of ${id}: ${page.status} ${JSON.stringify(page.body)}`);
          const events = page.body.events as AgentEvent[];
          const sequences = events.map((e) => e.sequence);
          if (JSON.stringify(sequences) !== JSON.stringify(sequences.map((_, k) => k + 1))) problems.push(`${id}: log sequences ${JSON.stringify(sequences)}`);
          const last = events.filter((e) => e.event_type === agentEventTypes.lifecycle).at(-1);
          if (last?.payload.new_status !== status) problems.push(`${id}: record says ${status}, last lifecycle event says ${String(last?.payload.new_status)}`);
          logs.set(id, events);
        }),
      );
    }
    expect(problems).toEqual([]);
    const drained = [...agents.values()].filter((a) => a.acknowledged === "draining").length;
    expect(drained).toBeGreaterThan(0);

    // 3: every event of every log is in the stream exactly once, and the stream holds nothing else.
    const published = await readStream(harness.bus, harness.bus.streamName(streams.registry.name), (msg) => msg.headers?.get("Nats-Msg-Id") ?? "(no Nats-Msg-Id)");
    const copies = new Map<string, number>();
    for (const msgId of published) copies.set(msgId, (copies.get(msgId) ?? 0) + 1);
    const expected = [...logs].flatMap(([id, events]) => events.map((e) => agentEventMsgId(id, e.sequence)));
    expect(expected.filter((msgId) => copies.get(msgId) !== 1).map((msgId) => `${msgId} x${copies.get(msgId) ?? 0}`)).toEqual([]);
    expect(published.length).toBe(expected.length);

    // 4: the intents service's projection holds each agent's last lifecycle status.
    const want = new Map([...logs].map(([id, events]) => [id, events.filter((e) => e.event_type === agentEventTypes.lifecycle).at(-1)!]));
    const projected = async () =>
      new Map(
        (await harness.rows<{ agent_id: string; status: string; event_sequence: string }>(sql`select agent_id, status, event_sequence from intents.agent_status`)).map((row) => [row.agent_id, { status: row.status, sequence: Number(row.event_sequence) }]),
      );
    const behind = async () => {
      const rows = await projected();
      return [...want]
        .filter(([id, event]) => rows.get(id)?.status !== event.payload.new_status || rows.get(id)?.sequence !== event.sequence)
        .map(([id, event]) => `${id}: projected ${JSON.stringify(rows.get(id))}, last lifecycle ${event.payload.new_status} at ${event.sequence}`);
    };
    await until(async () => (await behind()).length === 0, 15_000, "the intents projection to catch up").catch(() => undefined);
    expect(await behind()).toEqual([]);
  });
});
