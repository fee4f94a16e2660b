import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock, intentsCommands } from "@intentmesh/contracts";
import { eq, sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { claimDue, intentBodyOf, onIntentEvent } from "../../services/triggers/src/firing";
import { SERVICE_CALLER } from "../../services/triggers/src/context";
import { firings, inbox, triggers } from "../../services/triggers/src/db/schema";
import { startTestCluster, TEST_KEYS, type ApiResponse, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError } from "../support/e2e-helpers";

/**
 * RFC-0017 through the gateway, driven as the official clients drive it: every trigger call of
 * the Python client (openintent/client.py: create_trigger, get_trigger, list_triggers,
 * update_trigger, fire_trigger, delete_trigger) with its exact paths, bodies and headers, and the
 * MCP server's three trigger tools (mcp-server/src/client.ts). Schedules run on the manual clock:
 * the scheduler's pass is called by the test (its interval is an hour in the test cluster).
 */

let cluster: TestCluster;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(new Date("2026-03-02T08:00:00.000Z"));
  cluster = await startTestCluster({ clock });
});
afterAll(async () => {
  await cluster?.stop();
});

type Key = keyof typeof TEST_KEYS;

/** The Python client's transport: the same three headers on every request, JSON in and out. */
function pythonClient(key: Key = "operator", agentId = "ops-1") {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, json?: unknown, params?: Record<string, string>, extra: Record<string, string> = {}): Promise<ApiResponse> => {
    const query = params ? `?${new URLSearchParams(params)}` : "";
    const res = await fetch(`${cluster.baseUrl}${path}${query}`, { method, headers: { ...headers, ...extra }, body: json === undefined ? undefined : JSON.stringify(json) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return {
    create_trigger: (name: string, trigger_type: string, kwargs: Record<string, unknown> = {}) => call("POST", "/api/v1/triggers", { name, type: trigger_type, ...kwargs }),
    get_trigger: (id: string) => call("GET", `/api/v1/triggers/${id}`),
    list_triggers: (namespace?: string, trigger_type?: string) => {
      const params: Record<string, string> = {};
      if (namespace) params.namespace = namespace;
      if (trigger_type) params.type = trigger_type;
      return call("GET", "/api/v1/triggers", undefined, params);
    },
    update_trigger: (id: string, version: number, kwargs: Record<string, unknown>) => call("PATCH", `/api/v1/triggers/${id}`, kwargs, undefined, { "If-Match": String(version) }),
    fire_trigger: (id: string) => call("POST", `/api/v1/triggers/${id}/fire`),
    delete_trigger: (id: string) => call("DELETE", `/api/v1/triggers/${id}`),
    history: (id: string) => call("GET", `/api/v1/triggers/${id}/history`),
  };
}

/** The MCP server's client (mcp-server/src/client.ts createTrigger, listTriggers, deleteTrigger). */
function mcpClient(key: Key = "agent", agentId = "agent-1") {
  const headers = { "X-API-Key": TEST_KEYS[key], "X-Agent-ID": agentId, "Content-Type": "application/json" };
  const call = async (method: string, path: string, body?: unknown): Promise<ApiResponse> => {
    const res = await fetch(`${cluster.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return {
    createTrigger: (p: { intent_id: string; trigger_type: string; condition: Record<string, unknown>; action: Record<string, unknown>; name?: string }) =>
      call("POST", `/api/v1/intents/${p.intent_id}/triggers`, { name: p.name ?? "", trigger_type: p.trigger_type, condition: p.condition, action: p.action, created_by: agentId }),
    listTriggers: (p: { intent_id: string }) => call("GET", `/api/v1/intents/${p.intent_id}/triggers`),
    deleteTrigger: (p: { intent_id: string; trigger_id: string }) => call("DELETE", `/api/v1/intents/${p.intent_id}/triggers/${p.trigger_id}`),
  };
}

const ok = (res: ApiResponse, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
};

/** Polls until `check` returns a value (the bus is asynchronous: events reach the triggers service a moment later). */
async function eventually<T>(check: () => Promise<T | undefined | null | false>, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The typed client (the gateway's own calls in this file; the official clients' calls above stay on their wire form). */
const admin = () => cluster.sdk();
const readIntent = (intentId: string) => admin().ops.intentsGet({ intent_id: intentId });

async function complete(intentId: string, reason?: string) {
  const intent = await readIntent(intentId);
  expect((await admin().send("intentsTransition", { intent_id: intentId, ifMatch: intent.version, body: { status: "completed", ...(reason ? { reason } : {}) } })).status).toBe(200);
}

const template = (title: string, extra: Record<string, unknown> = {}) => ({ type: "compliance.review", title, priority: "medium", context: { scope: "all", fired: "{{ trigger.fired_at }}", n: "{{ trigger.fire_count }}" }, ...extra });

describe("the Python client's trigger calls (RFC-0017 §8)", () => {
  it("create_trigger, get_trigger, list_triggers, update_trigger (If-Match), delete_trigger", async () => {
    const py = pythonClient();
    const created = ok(
      await py.create_trigger("Daily Compliance Review", "schedule", { condition: { cron: "0 9 * * MON-FRI", timezone: "America/New_York" }, intent_template: template("Daily review"), deduplication: "skip", namespace: "compliance" }),
      201,
    );
    expect(created.trigger_id).toMatch(/^trg_[0-9a-f]{32}$/);
    expect(created).toMatchObject({ name: "Daily Compliance Review", type: "schedule", enabled: true, deduplication: "skip", namespace: "compliance", fire_count: 0, version: 1, last_fired_at: null });
    // Monday 2026-03-02 09:00 in New York (EST) is 14:00 UTC.
    expect(created.next_fire_at).toBe("2026-03-02T14:00:00.000+00:00");

    expect(ok(await py.get_trigger(created.trigger_id))).toEqual(created);
    const listed = ok(await py.list_triggers("compliance", "schedule"));
    expect(Array.isArray(listed)).toBe(true);
    expect(listed.map((t: { trigger_id: string }) => t.trigger_id)).toEqual([created.trigger_id]);
    expect(ok(await py.list_triggers("elsewhere"))).toEqual([]);
    expect(ok(await py.list_triggers(undefined, "event")).some((t: { trigger_id: string }) => t.trigger_id === created.trigger_id)).toBe(false);

    const paused = ok(await py.update_trigger(created.trigger_id, 1, { enabled: false }));
    expect(paused).toMatchObject({ enabled: false, version: 2, next_fire_at: null });
    expectError(await py.update_trigger(created.trigger_id, 1, { enabled: true }), 409, "VERSION_MISMATCH");
    clock.advance(10 * 3600_000); // resumed Monday 18:00 UTC: the next is Tuesday 09:00 New York
    const resumed = ok(await py.update_trigger(created.trigger_id, 2, { enabled: true, name: "Weekday review" }));
    expect(resumed).toMatchObject({ enabled: true, version: 3, name: "Weekday review", next_fire_at: "2026-03-03T14:00:00.000+00:00" });

    expect(ok(await py.delete_trigger(created.trigger_id))).toEqual({ status: "deleted", trigger_id: created.trigger_id });
    expectError(await py.get_trigger(created.trigger_id), 404, "TRIGGER_NOT_FOUND");
    expectError(await py.delete_trigger(created.trigger_id), 404, "TRIGGER_NOT_FOUND");
  });

  it("fire_trigger answers 201 with the created intent, whose lineage and trigger.fired event say where it came from", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Manual", "schedule", { condition: { cron: "0 0 1 1 *" }, intent_template: template("Run {{ trigger.fire_count }} of {{ trigger.name }}", { description: "made by hand" }) }), 201);
    const intent = ok(await py.fire_trigger(trigger.trigger_id), 201);
    expect(intent).toMatchObject({ title: "Run 1 of Manual", description: "made by hand", status: "active", created_by: `trigger:${trigger.trigger_id}`, trigger_id: trigger.trigger_id });
    expect(intent.state.scope).toBe("all");
    expect(intent.state.n).toBe(1);
    expect(intent.state._trigger).toMatchObject({ created_by: "trigger", trigger_id: trigger.trigger_id, trigger_type: "schedule", trigger_depth: 1, trigger_chain: [trigger.trigger_id], firing_id: intent.firing_id, intent_type: "compliance.review", priority: "medium" });

    const fired = await eventually(async () => (await allEvents(cluster, intent.id)).find((e) => e.event_type === "trigger.fired"), "trigger.fired in the intent's log");
    expect(fired.payload).toMatchObject({ trigger_id: trigger.trigger_id, created_intent_id: intent.id, firing_id: intent.firing_id, source: "manual", trigger_depth: 1 });

    const after = ok(await py.get_trigger(trigger.trigger_id));
    expect(after.fire_count).toBe(1);
    expect(after.last_fired_at).not.toBeNull();
    const history = ok(await py.history(trigger.trigger_id));
    expect(history).toEqual([expect.objectContaining({ firing_id: intent.firing_id, source: "manual", status: "created", intent_id: intent.id })]);
  });

  it("refuses bad definitions with a 400 naming the field, and creation by agent keys with 403, writing nothing", async () => {
    const py = pythonClient();
    const before = ok(await py.list_triggers()).length;
    expectError(await py.create_trigger("bad", "schedule", { condition: { cron: "0 9 * *" }, intent_template: template("x") }), 400, "VALIDATION_FAILED");
    expectError(await py.create_trigger("bad", "schedule", { condition: { cron: "0 9 * * *", timezone: "Nowhere/Land" }, intent_template: template("x") }), 400, "VALIDATION_FAILED");
    expectError(await py.create_trigger("bad", "webhook", { condition: { path: "/hooks/x" }, intent_template: template("x") }), 400, "VALIDATION_FAILED");
    expectError(await py.create_trigger("bad", "event", { condition: { cron: "* * * * *" }, intent_template: template("x") }), 400, "VALIDATION_FAILED");
    expectError(await py.create_trigger("bad", "schedule", { condition: { cron: "* * * * *" } }), 400, "VALIDATION_FAILED");
    expectError(await pythonClient("agent", "agent-1").create_trigger("mine", "schedule", { condition: { cron: "* * * * *" }, intent_template: template("x") }), 403, "FORBIDDEN");
    const res = await py.create_trigger("bad", "schedule", { condition: { cron: "0 9 * *" }, intent_template: template("x") });
    expect(res.body.message).toMatch(/condition\.cron/);
    expect(ok(await py.list_triggers()).length).toBe(before);
    expectError(await py.fire_trigger("trg_00000000000000000000000000000000"), 404, "TRIGGER_NOT_FOUND");
  });

  it("a template the intents service refuses makes a failed firing (422 TRIGGER_FIRE_FAILED by hand), not a retry loop", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Reserved", "schedule", { condition: { cron: "0 0 1 1 *" }, intent_template: { title: "r", context: { _suspension: { forged: true } } } }), 201);
    const res = await py.fire_trigger(trigger.trigger_id);
    expectError(res, 422, "TRIGGER_FIRE_FAILED");
    expect(res.body.message).toMatch(/_suspension/);
    const history = ok(await py.history(trigger.trigger_id));
    expect(history).toEqual([expect.objectContaining({ status: "failed", intent_id: null })]);
    ok(await py.delete_trigger(trigger.trigger_id));
  });
});

describe("schedules on the scheduler's clock", () => {
  it("fires each due time once, and once for all the due times it missed", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Every ten minutes", "schedule", { condition: { interval_seconds: 600 }, intent_template: template("Tick {{ trigger.scheduled_for }}") }), 201);
    const created = new Date(trigger.created_at).getTime();
    expect(new Date(trigger.next_fire_at).getTime()).toBe(created + 600_000);

    await cluster.triggers.scheduler.sweep();
    expect(ok(await py.history(trigger.trigger_id))).toEqual([]);

    clock.advance(600_000);
    await cluster.triggers.scheduler.sweep();
    await cluster.triggers.scheduler.sweep(); // a second pass at the same time fires nothing more
    let history = ok(await py.history(trigger.trigger_id));
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ source: "schedule", status: "created", scheduled_for: new Date(created + 600_000).toISOString().replace("Z", "+00:00"), reason: null });
    const first = await readIntent(history[0].intent_id);
    expect(first.title).toBe(`Tick ${history[0].scheduled_for}`);

    // Down for 35 minutes: the due times at +20, +30, +40 are one firing (misfire policy), the next is +50.
    clock.advance(35 * 60_000);
    await cluster.triggers.scheduler.sweep();
    history = ok(await py.history(trigger.trigger_id));
    expect(history).toHaveLength(2);
    expect(history[0]).toMatchObject({ status: "created", scheduled_for: new Date(created + 1_200_000).toISOString().replace("Z", "+00:00") });
    expect(history[0].reason).toMatch(/2 missed due time\(s\) coalesced/);
    const now = ok(await py.get_trigger(trigger.trigger_id));
    expect(now).toMatchObject({ fire_count: 2, next_fire_at: new Date(created + 3_000_000).toISOString().replace("Z", "+00:00") });
    // Paused, then resumed 7 minutes later: the interval keeps its grid (+60 min), and nothing is made up.
    const paused = ok(await py.update_trigger(trigger.trigger_id, now.version, { enabled: false }));
    clock.advance(7 * 60_000);
    const resumed = ok(await py.update_trigger(trigger.trigger_id, paused.version, { enabled: true }));
    expect(resumed.next_fire_at).toBe(new Date(created + 3_600_000).toISOString().replace("Z", "+00:00"));
    await cluster.triggers.scheduler.sweep();
    expect(ok(await py.history(trigger.trigger_id))).toHaveLength(2);
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("claims a due time once when two replicas' passes race", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Raced", "schedule", { condition: { interval_seconds: 60 }, intent_template: template("Raced") }), 201);
    clock.advance(60_000);
    const ctx = cluster.triggers.ctx;
    const claimed = await Promise.all([claimDue(ctx), claimDue(ctx), claimDue(ctx)]);
    expect(claimed.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
    const history = await eventually(async () => {
      await cluster.triggers.scheduler.sweep();
      const h = ok(await py.history(trigger.trigger_id));
      return h.every((f: { status: string }) => f.status === "created") ? h : undefined;
    }, "the firing to be dispatched");
    expect(history).toHaveLength(1);
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("a dispatch cut after the intent was created (a crash before the firing was marked) creates no second intent, and an intent that ended meanwhile frees its place", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Cut", "schedule", { condition: { interval_seconds: 60 }, intent_template: template("Cut"), deduplication: "skip" }), 201);
    clock.advance(60_000);
    const ctx = cluster.triggers.ctx;
    await claimDue(ctx);
    // What the dying replica did: the intent was created under the firing's id, the commit that marks the firing never came.
    const [firing] = await ctx.db.select().from(firings).where(eq(firings.triggerId, trigger.trigger_id));
    const [row] = await ctx.db.select().from(triggers).where(eq(triggers.id, trigger.trigger_id));
    expect(firing!.status).toBe("pending");
    const early = await cluster.client.request(intentsCommands.create, SERVICE_CALLER, { intent_id: firing!.intentId!, body: intentBodyOf(row!, firing!) });
    // The intent ends before the firing is dispatched again, and the triggers service has seen that (its inbox holds the event).
    await complete(early.id);
    // Its sequence is not always 2: the scheduler's own pass, woken by any consumed event, may
    // dispatch the pending firing first and log trigger.fired before the status change.
    const statusChange = (await allEvents(cluster, early.id)).find((e) => e.event_type === "status_changed")!;
    await eventually(async () => (await ctx.db.select().from(inbox).where(eq(inbox.messageId, `intent:${early.id}:e${statusChange.sequence}`))).length > 0, "the status change to be consumed");
    // The next pass takes the pending firing again: the same intent, no second one.
    const history = await eventually(async () => {
      await cluster.triggers.scheduler.sweep();
      const h = ok(await py.history(trigger.trigger_id));
      return h[0].status === "created" ? h : undefined;
    }, "the pending firing to be dispatched again");
    expect(history).toEqual([expect.objectContaining({ status: "created", intent_id: early.id })]);
    const made = await admin().ops.intentsList({ query: { created_by: `trigger:${trigger.trigger_id}` } });
    expect(made.intents.map((i) => i.id)).toEqual([early.id]);
    // Its intent is over, so skip lets the trigger fire again.
    ok(await py.fire_trigger(trigger.trigger_id), 201);
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("fires a one-time schedule (at) once and then disables it", async () => {
    const py = pythonClient();
    const at = new Date(clock.now().getTime() + 60_000).toISOString();
    const trigger = ok(await py.create_trigger("Once", "schedule", { condition: { at }, intent_template: template("Once") }), 201);
    clock.advance(120_000);
    await cluster.triggers.scheduler.sweep();
    clock.advance(120_000);
    await cluster.triggers.scheduler.sweep();
    expect(ok(await py.history(trigger.trigger_id))).toHaveLength(1);
    expect(ok(await py.get_trigger(trigger.trigger_id))).toMatchObject({ enabled: false, next_fire_at: null, fire_count: 1 });
  });
});

describe("deduplication (§6) and concurrency limits", () => {
  it("skip: no second intent while the first is open; once it ends the trigger fires again", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Skip", "schedule", { condition: { cron: "0 0 1 1 *" }, intent_template: template("Skip"), deduplication: "skip" }), 201);
    const first = ok(await py.fire_trigger(trigger.trigger_id), 201);
    expectError(await py.fire_trigger(trigger.trigger_id), 409, "TRIGGER_DEDUPLICATED");
    await complete(first.id);
    const second = await eventually(async () => {
      const res = await py.fire_trigger(trigger.trigger_id);
      return res.status === 201 ? res.body : undefined;
    }, "the trigger to fire after its intent completed");
    expect(second.id).not.toBe(first.id);
  });

  it("max_concurrent lets that many intents be open at once; a schedule past it records a skipped firing", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Two at once", "schedule", { condition: { interval_seconds: 60 }, intent_template: template("Two"), deduplication: "skip", max_concurrent: 2 }), 201);
    ok(await py.fire_trigger(trigger.trigger_id), 201);
    ok(await py.fire_trigger(trigger.trigger_id), 201);
    expectError(await py.fire_trigger(trigger.trigger_id), 409, "TRIGGER_DEDUPLICATED");
    clock.advance(60_000);
    await cluster.triggers.scheduler.sweep();
    const history = ok(await py.history(trigger.trigger_id));
    expect(history[0]).toMatchObject({ source: "schedule", status: "skipped", intent_id: null });
    expect(history[0].reason).toMatch(/deduplication/);
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("queue: one deferred firing, released when the open intent ends", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Queue", "schedule", { condition: { interval_seconds: 60 }, intent_template: template("Queued"), deduplication: "queue" }), 201);
    const open = ok(await py.fire_trigger(trigger.trigger_id), 201);
    clock.advance(60_000);
    await cluster.triggers.scheduler.sweep();
    clock.advance(60_000);
    await cluster.triggers.scheduler.sweep();
    let history = ok(await py.history(trigger.trigger_id));
    expect(history.map((f: { status: string }) => f.status)).toEqual(["skipped", "queued", "created"]);
    ok(await py.update_trigger(trigger.trigger_id, ok(await py.get_trigger(trigger.trigger_id)).version, { enabled: false }));
    await complete(open.id);
    history = await eventually(async () => {
      const h = ok(await py.history(trigger.trigger_id));
      return h.some((f: { status: string; source: string }) => f.source === "schedule" && f.status === "created") ? h : undefined;
    }, "the queued firing to be released");
    const released = history.find((f: { status: string; source: string }) => f.source === "schedule" && f.status === "created");
    expect(released.reason).toMatch(/released from the queue/);
    expect((await readIntent(released.intent_id)).title).toBe("Queued");
  });
});

describe("event triggers (§3)", () => {
  it("fire on a matching intent event, once, with the event's fields in the template", async () => {
    const py = pythonClient();
    const trigger = ok(
      await py.create_trigger("Receipt after billing", "event", {
        condition: { event: "intent.resolved", filter: { to_state: "completed", reason: "billing *" } },
        intent_template: { title: "Receipt for {{ event.intent_id }}", context: { source_intent: "{{ event.intent_id }}", from: "{{ event.from_state }}" } },
      }),
      201,
    );
    expect(trigger.next_fire_at).toBeNull();
    const other = await createIntent(cluster, { title: "shipping run" });
    await complete(other.id, "shipping done");
    const billing = await createIntent(cluster, { title: "billing run" });
    await complete(billing.id, "billing done");
    const history = await eventually(async () => {
      const h = ok(await py.history(trigger.trigger_id));
      return h.length && h[0].status === "created" ? h : undefined;
    }, "the event trigger to fire");
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ source: "event", trigger_depth: 1 });
    const receipt = await readIntent(history[0].intent_id);
    expect(receipt).toMatchObject({ title: `Receipt for ${billing.id}`, state: { source_intent: billing.id, from: "active" } });
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("acknowledges the events no event trigger can match without a transaction: no inbox row for them, one for the match", async () => {
    const inboxRows = async () => Number(rowsOf<{ n: string }>(await cluster.database.db.execute(sql`select count(*) as n from triggers.inbox where consumer = 'triggers-intent-events'`))[0]!.n);
    const watched = await createIntent(cluster, { title: "watched for the cache" });
    const created = await admin().send("triggersCreate", { body: { name: "on ping", type: "event", condition: { event: "ping.cache", filter: { intent_id: watched.id } }, intent_template: { title: "pinged" } } });
    expect(created.status).toBe(201);
    const trigger = created.data;
    const note = async (body: { event_type: string; payload: Record<string, unknown> }) =>
      expect((await admin().send("intentsAppendEvent", { intent_id: watched.id, body })).status).toBe(201);
    // The consumer has seen everything written so far; count from here.
    await note({ event_type: "noise", payload: {} });
    const settle = async () => {
      let last = -1;
      for (;;) {
        await new Promise((r) => setTimeout(r, 300));
        const now = await inboxRows();
        if (now === last) return now;
        last = now;
      }
    };
    const before = await settle();
    for (let i = 0; i < 20; i++) await note({ event_type: "noise", payload: { i } });
    await note({ event_type: "ping.cache", payload: {} });
    await eventually(async () => {
      const h = await admin().ops.triggersHistory({ trigger_id: trigger.trigger_id });
      return h.length === 1 && h[0]!.status === "created" ? h : undefined;
    }, "the matching event to fire");
    expect((await settle()) - before).toBe(1);
    expect((await admin().send("triggersDelete", { trigger_id: trigger.trigger_id })).status).toBe(200);
  });

  it("fire on an agent's lifecycle (agent.registered, §3.2)", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Welcome", "event", { condition: { event: "agent.registered", filter: { agent_id: "watch-*" } }, intent_template: { title: "Onboard {{ event.agent_id }}" } }), 201);
    for (const agentId of ["other-1", "watch-1"]) expect((await cluster.sdk("agent", agentId).send("agentsRegister", { body: { agent_id: agentId, role_id: "r" } })).status).toBe(201);
    const history = await eventually(async () => {
      const h = ok(await py.history(trigger.trigger_id));
      return h.length && h[0].status === "created" ? h : undefined;
    }, "the agent trigger to fire");
    expect(history).toHaveLength(1);
    expect((await readIntent(history[0].intent_id)).title).toBe("Onboard watch-1");
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("answers only events that happened once it existed (a replayed older event fires nothing)", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Late", "event", { condition: { event: "intent.created" }, intent_template: { title: "late" } }), 201);
    const ctx = cluster.triggers.ctx;
    const event = (id: string, created_at: string) => ({
      id,
      intent_id: "11111111-1111-4111-8111-111111111111",
      sequence: 1,
      event_type: "intent_created",
      actor: "someone",
      payload: { title: "x" },
      created_at,
      previous_event_hash: null,
      event_hash: "sha256:x",
    });
    const before = new Date(new Date(trigger.created_at).getTime() - 1000).toISOString();
    expect(await ctx.db.transaction((tx) => onIntentEvent(ctx, tx, event("21111111-1111-4111-8111-111111111111", before)))).toBe(0);
    expect(await ctx.db.transaction((tx) => onIntentEvent(ctx, tx, event("31111111-1111-4111-8111-111111111111", trigger.created_at)))).toBe(1);
    const history = ok(await py.history(trigger.trigger_id));
    expect(history.map((f: { cause_event_id: string }) => f.cause_event_id)).toEqual(["31111111-1111-4111-8111-111111111111"]);
    ok(await py.update_trigger(trigger.trigger_id, trigger.version, { enabled: false }));
    ok(await py.delete_trigger(trigger.trigger_id));
  });

  it("stops a chain of triggers firing one another at the cascade limit (§3.3)", async () => {
    const py = pythonClient();
    const trigger = ok(await py.create_trigger("Loop", "event", { condition: { event: "trigger.fired", filter: { trigger_name: "Loop" } }, intent_template: { title: "Loop {{ event.trigger_depth }}" } }), 201);
    ok(await py.fire_trigger(trigger.trigger_id), 201);
    const history = await eventually(async () => {
      const h = ok(await py.history(trigger.trigger_id));
      return h.some((f: { status: string }) => f.status === "suppressed") ? h : undefined;
    }, "the chain to reach the cascade limit");
    const created = history.filter((f: { status: string }) => f.status === "created");
    // The manual firing is depth 1, each event firing one deeper, up to 10; the 11th is suppressed.
    expect(created).toHaveLength(10);
    expect(Math.max(...created.map((f: { trigger_depth: number }) => f.trigger_depth))).toBe(10);
    expect(history.find((f: { status: string }) => f.status === "suppressed")).toMatchObject({ trigger_depth: 11, intent_id: null });
    ok(await py.delete_trigger(trigger.trigger_id));
  });
});

describe("the MCP server's trigger tools (intent-scoped)", () => {
  it("openintent_create_trigger, openintent_list_triggers, openintent_delete_trigger; a state_change fires with the action", async () => {
    const mcp = mcpClient();
    const intent = await createIntent(cluster, { title: "watched" }, "agent");
    const created = ok(await mcp.createTrigger({ intent_id: intent.id, name: "on done", trigger_type: "state_change", condition: { to_state: "completed" }, action: { type: "notify", title: "Follow up on watched", to: "ops" } }), 201);
    expect(created).toMatchObject({ name: "on done", type: "event", intent_id: intent.id, action: { type: "notify", title: "Follow up on watched", to: "ops" }, created_by: "agent-1" });
    expect(created.condition).toEqual({ event: "intent.state_changed", filter: { to_state: "completed" } });
    expect(ok(await mcp.listTriggers({ intent_id: intent.id }))).toEqual([created]);

    // Another intent completing does not fire it: the trigger is scoped to its intent.
    const elsewhere = await createIntent(cluster, { title: "elsewhere" });
    await complete(elsewhere.id);
    await complete(intent.id);
    const history = await eventually(async () => {
      const h = ok(await pythonClient().history(created.trigger_id));
      return h.length && h[0].status === "created" ? h : undefined;
    }, "the scoped trigger to fire");
    expect(history).toHaveLength(1);
    const followUp = await readIntent(history[0].intent_id);
    expect(followUp.title).toBe("Follow up on watched");
    expect(followUp.state._trigger).toHaveProperty("scope_intent_id", intent.id);
    const fired = await eventually(async () => (await allEvents(cluster, followUp.id)).find((e) => e.event_type === "trigger.fired"), "trigger.fired");
    expect(fired.payload.action).toEqual({ type: "notify", title: "Follow up on watched", to: "ops" });

    expectError(await mcp.deleteTrigger({ intent_id: elsewhere.id, trigger_id: created.trigger_id }), 404, "TRIGGER_NOT_FOUND");
    expect(ok(await mcp.deleteTrigger({ intent_id: intent.id, trigger_id: created.trigger_id }))).toEqual({ status: "deleted", trigger_id: created.trigger_id });
    expect(ok(await mcp.listTriggers({ intent_id: intent.id }))).toEqual([]);
    expectError(await mcp.createTrigger({ intent_id: intent.id, trigger_type: "webhook", condition: {}, action: {} }), 400, "VALIDATION_FAILED");
    const unknown = "00000000-0000-4000-8000-000000000000";
    expectError(await mcp.listTriggers({ intent_id: unknown }), 404, "INTENT_NOT_FOUND");
    expectError(await mcp.createTrigger({ intent_id: unknown, trigger_type: "event", condition: { event: "intent.created" }, action: {} }), 404, "INTENT_NOT_FOUND");
  });
});
