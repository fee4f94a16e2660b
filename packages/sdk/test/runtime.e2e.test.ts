import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ManualClock, type SuspensionRecord } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { startCuttingProxy, type CuttingProxy } from "../../../test/support/cutting-proxy";
import { allEvents, createIntent, uniqueTag } from "../../../test/support/e2e-helpers";
import {
  createClient,
  holdLease,
  InputCancelledError,
  InputTimeoutError,
  isApiError,
  LeaseLostError,
  requestApproval,
  requestInput,
  runTaskLoop,
  shouldRequestInput,
  startAgent,
  TaskFailure,
  type Intentmesh,
  type StreamMessage,
} from "../src/index";


/** Polls until the assertion holds; generous, since the whole suite shares two cores. */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 10_000, interval: 25 });
/** The SDK's runtime helpers against the whole cluster, in process, on a manual clock. */
let cluster: TestCluster;
let proxy: CuttingProxy;
const clock = new ManualClock(new Date());
const client = (key: keyof typeof TEST_KEYS, agentId?: string, baseUrl = cluster.baseUrl): Intentmesh => createClient({ baseUrl, apiKey: TEST_KEYS[key], agentId, retry: { baseDelayMs: 10 } });
/** The suspension record an intent's state carries (2.9: state._suspension). */
const suspensionOf = (intent: { state: Record<string, unknown> }) => intent.state._suspension as SuspensionRecord;

beforeAll(async () => {
  cluster = await startTestCluster({ clock });
  proxy = await startCuttingProxy(cluster.baseUrl);
});

afterAll(async () => {
  await proxy?.close();
  await cluster?.stop();
});

async function collect<K extends "intents" | "channels">(iterator: AsyncIterableIterator<StreamMessage<K>>, count: number): Promise<StreamMessage<K>[]> {
  const out: StreamMessage<K>[] = [];
  while (out.length < count) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

describe("register and heartbeats", () => {
  it("keeps heartbeats going with the agent's load, honours a drain command, and ends when the server deregisters the agent", async () => {
    const agentId = uniqueTag("worker");
    const drains: unknown[] = [];
    const session = await startAgent(client("agent", agentId), {
      registration: { capabilities: ["write"], heartbeat_config: { interval_seconds: 5, unhealthy_after_seconds: 10, dead_after_seconds: 20 } },
      heartbeatIntervalMs: 25,
      load: () => ({ current_load: 2 }),
      onDrain: (command) => drains.push(command),
    });
    expect(session.agent).toMatchObject({ agent_id: agentId, status: "active", capabilities: ["write"] });
    await eventually(async () => expect((await client("admin").ops.agentsGet({ agent_id: agentId })).capacity.current_load).toBe(2));
    expect(session.lastHeartbeat).toMatchObject({ acknowledged: true, agent_status: "active" });

    // The agent holds a lease; a coordinator asks it to drain.
    const intent = await createIntent(cluster);
    const lease = await holdLease(session.client, intent.id, { scope: "draft", ttlSeconds: 600 });
    const coordinator = client("coordinator");
    const record = await coordinator.ops.agentsGet({ agent_id: agentId });
    await coordinator.ops.agentsChangeStatus({ agent_id: agentId, ifMatch: record.version, body: { status: "draining", reason: "scale down" } });
    await eventually(() => expect(session.draining.aborted).toBe(true));
    expect(drains).toEqual([expect.objectContaining({ command: "drain", reason: "scale down" })]);
    expect(session.signal.aborted).toBe(false);
    await eventually(() => expect(session.lastHeartbeat?.agent_status).toBe("draining"));

    // It finishes its work and lets go; the registry's drain check then deregisters it, and the next heartbeat ends the session.
    await lease.release();
    clock.advance(5_000);
    await cluster.registry.sweeper.sweep();
    expect(await session.ended).toBe("deregistered");
    expect(session.signal.aborted).toBe(true);
    expect((await client("admin").ops.agentsGet({ agent_id: agentId })).status).toBe("deregistered");
  });

  it("stop({deregister: true}) stops the heartbeats and deregisters at once", async () => {
    const session = await startAgent(client("agent"), { agentId: uniqueTag("short"), heartbeatIntervalMs: 20 });
    await eventually(() => expect(session.lastHeartbeat).toBeDefined());
    await session.stop({ deregister: true });
    expect(await session.ended).toBe("deregistered");
    expect((await client("admin").ops.agentsGet({ agent_id: session.agentId })).status).toBe("deregistered");
  });
});

describe("leases", () => {
  it("renews a held lease and aborts its signal when renewal is refused (an operator released it)", async () => {
    const intent = await createIntent(cluster);
    const agent = client("agent", uniqueTag("holder"));
    const held = await holdLease(agent, intent.id, { scope: "report", ttlSeconds: 30, renewEveryMs: 20 });
    await eventually(async () => {
      const renewals = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "lease_acquired" && e.payload.renewal === true);
      expect(renewals.length).toBeGreaterThanOrEqual(2);
    });
    expect(held.signal.aborted).toBe(false);
    await client("admin").ops.intentsReleaseLease({ intent_id: intent.id, lease_id: held.lease.id });
    await eventually(() => expect(held.signal.aborted).toBe(true));
    expect(held.signal.reason).toBeInstanceOf(LeaseLostError);
    expect((held.signal.reason as LeaseLostError).code).toBe("LEASE_RELEASED");
  });

  it("counts a lease lost once it has run out on this machine while the server cannot be reached", async () => {
    const intent = await createIntent(cluster);
    const agent = client("agent", uniqueTag("cutoff"), proxy.url);
    const lost: LeaseLostError[] = [];
    const held = await holdLease(agent, intent.id, { scope: "*", ttlSeconds: 1, renewEveryMs: 100, onLost: (e) => lost.push(e) });
    proxy.down();
    try {
      await eventually(() => expect(held.signal.aborted).toBe(true));
    } finally {
      proxy.up();
    }
    expect(lost).toHaveLength(1);
    expect(lost[0]!.lease.id).toBe(held.lease.id);
  });
});

describe("streams", () => {
  it("resume after a cut connection with Last-Event-ID: every event once, in order", async () => {
    const intent = await createIntent(cluster);
    const admin = client("admin", undefined, proxy.url);
    const connects: (string | undefined)[] = [];
    const stop = new AbortController();
    const stream = admin.subscribe("intents", intent.id, { signal: stop.signal, reconnect: { minDelayMs: 20 }, onConnect: (id) => connects.push(id) });
    const append = (n: number) => client("admin").ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "progress", payload: { n } } });
    const firstTwo = collect(stream, 2);
    await eventually(() => expect(connects).toHaveLength(1));
    await append(1);
    await append(2);
    expect((await firstTwo).map((m) => (m.data.payload as { n: number }).n)).toEqual([1, 2]);
    proxy.cutAll();
    await append(3); // while the client is away
    await append(4);
    const rest = await collect(stream, 2);
    expect(rest.map((m) => (m.data.payload as { n: number }).n)).toEqual([3, 4]);
    expect(connects.length).toBeGreaterThanOrEqual(2);
    expect(connects[1]).toBe((await firstTwo)[1]!.id);
    stop.abort();
    expect((await stream.next()).done).toBe(true);
  });

  it("start from the beginning of the log, or from a given event", async () => {
    const intent = await createIntent(cluster);
    const admin = client("admin");
    for (const n of [1, 2, 3]) await admin.ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "progress", payload: { n } } });
    const stop = new AbortController();
    const all = await collect(admin.subscribe("intents", intent.id, { from: "start", signal: stop.signal }), 4);
    expect(all.map((m) => m.event)).toEqual(["intent_created", "progress", "progress", "progress"]);
    const after = await collect(admin.subscribe("intents", intent.id, { from: { lastEventId: all[2]!.id! }, signal: stop.signal }), 1);
    expect(after[0]!.data.payload).toEqual({ n: 3 });
    stop.abort();
  });

  it("a channel stream resumes by message sequence", async () => {
    const intent = await createIntent(cluster);
    const admin = client("admin", undefined, proxy.url);
    const channel = await admin.ops.channelsCreate({ intent_id: intent.id, body: { name: uniqueTag("ch") } });
    const send = (n: number) => client("admin").ops.channelsSend({ channel_id: channel.id, body: { message_type: "broadcast", payload: { n } } });
    await send(0); // before the subscription: not delivered
    const stop = new AbortController();
    const connects: (string | undefined)[] = [];
    const stream = admin.subscribe("channels", channel.id, { signal: stop.signal, reconnect: { minDelayMs: 20 }, onConnect: (id) => connects.push(id) });
    const first = collect(stream, 1);
    await eventually(() => expect(connects).toEqual(["1"]));
    await send(1);
    expect((await first)[0]!.data.payload).toEqual({ n: 1 });
    proxy.cutAll();
    await send(2);
    const next = await collect(stream, 1);
    expect(next[0]!.data).toMatchObject({ payload: { n: 2 }, sequence: 3, event_type: "channel_message" });
    stop.abort();
  });

  it("refuses at once a stream the key may not read (no reconnection loop)", async () => {
    const stream = client("admin").subscribe("intents", "00000000-0000-4000-8000-000000000000", { from: { lastEventId: "0" } });
    const failure = await stream.next().catch((e: unknown) => e);
    expect(isApiError(failure, "INTENT_NOT_FOUND")).toBe(true);
  });
});

describe("the task loop", () => {
  it("claims, starts and completes; a retryable failure is retried by the policy, a non-retryable one fails", async () => {
    const intent = await createIntent(cluster);
    const coordinator = client("coordinator");
    await coordinator.ops.retriesPutPolicy({ intent_id: intent.id, body: { strategy: "fixed", max_retries: 2, base_delay_ms: 10 } });
    const titles = ["write", "flaky", "forbidden"];
    for (const title of titles) await coordinator.ops.tasksCreate({ intent_id: intent.id, body: { title } });
    const attempts = new Map<string, number>();
    const agentId = uniqueTag("loop");
    const summary = await runTaskLoop(client("agent", agentId), {
      intentId: intent.id,
      until: "idle",
      pollIntervalMs: 200,
      handler: async (task) => {
        attempts.set(task.title, (attempts.get(task.title) ?? 0) + 1);
        if (task.title === "flaky" && attempts.get("flaky") === 1) throw new TaskFailure("rate limited", "RATE_LIMIT");
        if (task.title === "forbidden") throw new TaskFailure("not allowed", "PERMISSION_DENIED");
        return { wrote: task.title, attempt: task.attempt };
      },
    });
    expect(summary).toEqual({ completed: 2, failed: 1, retried: 1 });
    const tasks = (await coordinator.ops.tasksList({ intent_id: intent.id })) as { tasks: { title: string; status: string; output: unknown; assigned_agent: string }[] };
    const byTitle = Object.fromEntries(tasks.tasks.map((t) => [t.title, t]));
    expect(byTitle.write).toMatchObject({ status: "completed", output: { wrote: "write", attempt: 1 }, assigned_agent: agentId });
    expect(byTitle.flaky).toMatchObject({ status: "completed", output: { wrote: "flaky", attempt: 2 } });
    expect(byTitle.forbidden).toMatchObject({ status: "failed" });
  });

  it("two agents share the ready tasks: each is claimed and completed exactly once", async () => {
    const intent = await createIntent(cluster);
    const coordinator = client("coordinator");
    for (let i = 0; i < 8; i += 1) await coordinator.ops.tasksCreate({ intent_id: intent.id, body: { title: `t${i}` } });
    const done: string[] = [];
    const loop = (agentId: string) =>
      runTaskLoop(client("agent", agentId), {
        intentId: intent.id,
        until: "idle",
        handler: async (task) => {
          done.push(task.title);
          await new Promise((r) => setTimeout(r, 5));
        },
      });
    const [a, b] = await Promise.all([loop(uniqueTag("a")), loop(uniqueTag("b"))]);
    expect(a.completed + b.completed).toBe(8);
    expect([...done].sort()).toEqual(["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"]);
    const claims = (await allEvents(cluster, intent.id)).filter((e) => e.event_type === "task.claimed");
    expect(claims).toHaveLength(8);
  });

  it("claims nothing more once draining, and finishes the task in hand", async () => {
    const intent = await createIntent(cluster);
    const coordinator = client("coordinator");
    for (const title of ["one", "two"]) await coordinator.ops.tasksCreate({ intent_id: intent.id, body: { title } });
    const draining = new AbortController();
    const summary = await runTaskLoop(client("agent", uniqueTag("drainer")), {
      intentId: intent.id,
      draining: draining.signal,
      handler: async () => {
        draining.abort(); // the drain command arrives while the first task runs
      },
    });
    expect(summary.completed).toBe(1);
    const statuses = ((await coordinator.ops.tasksList({ intent_id: intent.id })) as { tasks: { status: string }[] }).tasks.map((t) => t.status).sort();
    expect(statuses).toEqual(["completed", "ready"]);
  });
});

describe("human input", () => {
  const waitForSuspension = async (intentId: string) => {
    let id = "";
    await eventually(async () => {
      const intent = await client("admin").ops.intentsGet({ intent_id: intentId });
      expect(intent.status).toBe("suspended_awaiting_input");
      id = suspensionOf(intent).id;
    });
    return id;
  };

  it("requestInput suspends, waits over the stream and answers the operator's value", async () => {
    const intent = await createIntent(cluster);
    const agent = client("agent", uniqueTag("asker"));
    const asked = requestInput(agent, intent.id, {
      question: "Publish now?",
      choices: [
        { value: "yes", label: "Publish" },
        { value: "no", label: "Hold" },
      ],
      timeoutSeconds: 3600,
    });
    asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    const suspensionId = await waitForSuspension(intent.id);
    await client("operator").ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: suspensionId, value: "yes" } });
    const answer = await asked;
    expect(answer).toMatchObject({ value: "yes", resolution: "responded", respondedBy: "operator", cascade: "call-site" });
    expect(answer.intent.status).toBe("active");
  });

  it("after a timeout: the fail policy raises InputTimeoutError, a continuing policy answers the fallback value", async () => {
    const failing = await createIntent(cluster);
    const agent = client("agent", uniqueTag("waiter"));
    const asked = requestInput(agent, failing.id, { question: "Approve the budget?", responseType: "confirm", timeoutSeconds: 60, fallbackPolicy: "fail" }).catch((e: unknown) => e);
    await waitForSuspension(failing.id);
    clock.advance(61_000);
    await cluster.governance.timer.sweep();
    const failure = await asked;
    expect(failure).toBeInstanceOf(InputTimeoutError);
    expect((failure as InputTimeoutError).intent.status).toBe("abandoned");

    const continuing = await createIntent(cluster);
    const fallback = requestInput(agent, continuing.id, { question: "Which tone?", responseType: "text", timeoutSeconds: 60, fallbackPolicy: "complete_with_fallback", fallbackValue: "neutral" });
    fallback.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    await waitForSuspension(continuing.id);
    clock.advance(61_000);
    await cluster.governance.timer.sweep();
    expect(await fallback).toMatchObject({ value: "neutral", resolution: "expired" });
  });

  it("a suspension cancelled by abandoning the intent raises InputCancelledError", async () => {
    const intent = await createIntent(cluster);
    const asked = requestInput(client("agent", uniqueTag("cancel")), intent.id, { question: "Go on?", responseType: "confirm" }).catch((e: unknown) => e);
    await waitForSuspension(intent.id);
    const current = await client("admin").ops.intentsGet({ intent_id: intent.id });
    await client("operator").ops.intentsTransition({ intent_id: intent.id, ifMatch: current.version, body: { status: "abandoned", reason: "not needed" } });
    expect(await asked).toBeInstanceOf(InputCancelledError);
  });

  it("the retry cascade: the call's policy, else the agent's default, else none here (no platform default configured)", async () => {
    const agent = client("agent", uniqueTag("cascade"));
    const agentDefault = { max_attempts: 3, interval_seconds: 600, strategy: "fixed" as const, escalation_ladder: [], final_fallback_policy: "fail" as const };
    const callSite = { max_attempts: 2, interval_seconds: 300, strategy: "linear" as const, escalation_ladder: [], final_fallback_policy: "fail" as const };
    const cases = [
      { request: { retryPolicy: callSite }, expected: { level: "call-site", policy: callSite } },
      { request: {}, expected: { level: "agent", policy: agentDefault } },
    ];
    for (const { request, expected } of cases) {
      const intent = await createIntent(cluster);
      const stop = new AbortController();
      const asked = requestInput(agent, intent.id, { question: "Which?", responseType: "text", ...request }, { defaultRetryPolicy: agentDefault, signal: stop.signal });
      asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled
      const suspensionId = await waitForSuspension(intent.id);
      const record = suspensionOf(await client("admin").ops.intentsGet({ intent_id: intent.id }));
      expect(record.retry_policy).toMatchObject({ max_attempts: expected.policy.max_attempts, interval_seconds: expected.policy.interval_seconds, strategy: expected.policy.strategy });
      await client("operator").ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: suspensionId, value: "ok" } });
      expect((await asked).cascade).toBe(expected.level);
    }
    const plain = await createIntent(cluster);
    const asked = requestInput(agent, plain.id, { question: "Which?", responseType: "text" });
    asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    const suspensionId = await waitForSuspension(plain.id);
    await client("operator").ops.governanceRespond({ intent_id: plain.id, body: { suspension_id: suspensionId, value: "ok" } });
    expect((await asked).cascade).toBe("none");
  });

  it("shouldRequestInput answers the server's engagement decision and logs it", async () => {
    const intent = await createIntent(cluster);
    const agent = client("agent", uniqueTag("decider"));
    expect(await shouldRequestInput(agent, intent.id, { confidence: 0.95, risk: 0.1, reversibility: 0.9 })).toMatchObject({ mode: "autonomous", should_ask: false });
    expect(await shouldRequestInput(agent, intent.id, { confidence: 0.3, risk: 0.3, reversibility: 0.9 })).toMatchObject({ mode: "require_input", should_ask: true });
    await eventually(async () => expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "engagement.decision")).toHaveLength(2));
  });
});

describe("approvals", () => {
  it("requestApproval waits for the operator's decision: approved, then denied", async () => {
    const intent = await createIntent(cluster);
    const agent = client("agent", uniqueTag("requester"));
    const operator = client("operator");
    for (const decision of ["approve", "deny"] as const) {
      const waiting = requestApproval(agent, intent.id, { action: "complete", reason: `please ${decision}` });
      waiting.catch(() => undefined); // awaited below; a failure before that must not go unhandled
      let approvalId = "";
      await eventually(async () => {
        const pending = await operator.ops.governanceListApprovals({ intent_id: intent.id, query: { status: "pending" } });
        expect(pending.approvals).toHaveLength(1);
        approvalId = pending.approvals[0]!.id;
      });
      if (decision === "approve") await operator.ops.governanceApprove({ intent_id: intent.id, approval_id: approvalId, body: { reason: "fine" } });
      else await operator.ops.governanceDeny({ intent_id: intent.id, approval_id: approvalId, body: { reason: "not yet" } });
      const outcome = await waiting;
      expect(outcome.approved).toBe(decision === "approve");
      expect(outcome.approval).toMatchObject({ id: approvalId, decided_by: "operator" });
    }
  });
});
