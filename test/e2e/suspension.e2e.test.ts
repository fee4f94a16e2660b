import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { streams, type ManualClock, type SuspensionRecord } from "@intentmesh/contracts";
import { IntentmeshError, type BodyOf, type Intentmesh } from "@intentmesh/sdk";
import { rowsOf } from "@intentmesh/db";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, expectRejected, keyHeader } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { CANCEL_TRACKER_DURABLE, TRACKER_DURABLE } from "../../services/governance/src/tracker";

let cluster: TestCluster;
/** The typed client with the admin key. */
let admin: Intentmesh;
beforeAll(async () => {
  cluster = await startTestCluster();
  admin = cluster.sdk();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const CHOICES = [
  { value: "approve", label: "Approve", description: "ship it" },
  { value: "reject", label: "Reject" },
];

async function suspend(intentId: string, body: Partial<BodyOf<"governanceSuspend">>) {
  return cluster.sdk("agent").send("governanceSuspend", { intent_id: intentId, body: { question: "Ship?", fallback_policy: "fail", choices: CHOICES, ...body } });
}

async function suspended(body: Partial<BodyOf<"governanceSuspend">> = {}) {
  const intent = await createIntent(cluster);
  const res = await suspend(intent.id, body);
  expect(res.status).toBe(201);
  return res.data;
}

/** The suspension record an intent's state carries (2.9: state._suspension). */
const suspensionOf = (intent: { state: Record<string, unknown> }) => intent.state._suspension as SuspensionRecord;

const respond = (intentId: string, body: BodyOf<"governanceRespond">, key: "operator" | "agent" | "admin" | "coordinator" = "operator") =>
  cluster.sdk(key).send("governanceRespond", { intent_id: intentId, body });

const eventsOfType = async (intentId: string, type: string) => (await allEvents(cluster, intentId)).filter((e) => e.event_type === type);

async function tracked(suspensionId: string) {
  const [row] = rowsOf<{ status: string; attempt: number; next_due_at: Date | null }>(
    await cluster.database.db.execute(sql`select status, attempt, next_due_at from governance.suspensions where suspension_id = ${suspensionId}`),
  );
  return row;
}

/** The suspension tracker has taken (applied, or acknowledged as nothing to apply) every intent event published so far. */
async function trackerCaughtUp() {
  await vi.waitFor(async () => {
    const [row] = rowsOf<{ n: number }>(await cluster.database.db.execute(sql`select count(*)::int as n from intents.outbox where published_at is null`));
    expect(row!.n).toBe(0);
  });
  await vi.waitFor(async () => {
    for (const durable of [TRACKER_DURABLE, CANCEL_TRACKER_DURABLE]) {
      const info = await cluster.bus.jsm.consumers.info(cluster.bus.streamName(streams.intents.name), durable);
      expect(info.num_pending + info.num_ack_pending).toBe(0);
    }
  });
}

describe("POST /intents/{id}/suspend", () => {
  it("validates the record as 2.9 requires: choice needs choices, a fallback policy is required, response_type is an enum", async () => {
    const intent = await createIntent(cluster);
    await expectRejected(suspend(intent.id, { choices: undefined }), 400, "VALIDATION_FAILED");
    await expectRejected(suspend(intent.id, { fallback_policy: undefined }), 400, "VALIDATION_FAILED");
    // Raw: the types allow only the response types of 2.9.
    expectError(await cluster.api(`/intents/${intent.id}/suspend`, { body: { question: "Ship?", fallback_policy: "fail", choices: CHOICES, response_type: "maybe" }, key: "agent" }), 400, "VALIDATION_FAILED");
    await expectRejected(suspend(intent.id, { question: "" }), 400, "VALIDATION_FAILED");
    await expectRejected(suspend(intent.id, { timeout_seconds: 0 }), 400, "VALIDATION_FAILED");
    // Nothing was written by the refusals.
    expect((await admin.ops.intentsGet({ intent_id: intent.id }))).toMatchObject({ status: "active", version: intent.version });
  });

  it("suspends in one step: suspended_at and expires_at on the server clock, status, version + 1, one intent.suspended; a draft cannot be suspended", async () => {
    const intent = await createIntent(cluster);
    const now = clock().now();
    const res = await suspend(intent.id, { timeout_seconds: 600 });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe(`"${intent.version + 1}"`);
    const record = suspensionOf(res.data);
    expect(res.data.status).toBe("suspended_awaiting_input");
    expect(new Date(record.suspended_at).getTime()).toBe(now.getTime());
    expect(new Date(record.expires_at!).getTime()).toBe(now.getTime() + 600_000);
    expect(await eventsOfType(intent.id, "intent.suspended")).toHaveLength(1);
    expect(await tracked(record.id)).toMatchObject({ status: "waiting", attempt: 1 });
    await expectRejected(suspend(intent.id, {}), 409, "INVALID_TRANSITION");
    const draft = await createIntent(cluster, { status: "draft" });
    await expectRejected(suspend(draft.id, {}), 409, "INVALID_TRANSITION");
  });

  it("honours If-Match when sent", async () => {
    const intent = await createIntent(cluster);
    await expectRejected(admin.send("governanceSuspend", { intent_id: intent.id, ifMatch: intent.version + 5, body: { question: "q", fallback_policy: "fail", response_type: "text" } }), 409, "VERSION_MISMATCH");
  });
});

describe("POST /intents/{id}/suspend/respond (4.5, part 7)", () => {
  it("answers a choice: label and description, resolution responded, intent active, intent.resumed over SSE", async () => {
    const intent = await suspended();
    const id = suspensionOf(intent).id;
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, keyHeader("operator"));
    const res = await respond(intent.id, { suspension_id: id, value: "approve", responded_by: "alice", metadata: { via: "slack" } });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ intent_id: intent.id, suspension_id: id, resolution: "responded", value: "approve", choice_label: "Approve", choice_description: "ship it", responded_by: "alice" });
    expect(res.data.responded_at).toBe(clock().now().toISOString().replace("Z", "+00:00"));
    const after = (await admin.ops.intentsGet({ intent_id: intent.id }));
    expect(after.status).toBe("active");
    expect(suspensionOf(after)).toMatchObject({ id, resolution: "responded", response: "approve", responded_by: "alice" });
    await sse.waitFor((c) => c.events.some((e) => e.event === "intent.resumed"));
    await sse.close();
    const resumed = sse.events.find((e) => e.event === "intent.resumed")!.data;
    expect(resumed.payload).toMatchObject({ intent_id: intent.id, suspension_id: id, resolution: "responded", value: "approve", response: "approve", responded_by: "alice" });
    expect(await tracked(id)).toMatchObject({ status: "responded", next_due_at: null });
    // Answered once: a second answer finds the intent active.
    await expectRejected(respond(intent.id, { suspension_id: id, value: "reject" }), 409, "NOT_SUSPENDED");
  });

  it("422 for a missing or empty suspension_id and for a value outside the choices (valid_choices); 409 for another id; 403 for agent keys", async () => {
    const intent = await suspended();
    const id = suspensionOf(intent).id;
    await expectRejected(respond(intent.id, { value: "approve" }), 422, "SUSPENSION_ID_REQUIRED");
    await expectRejected(respond(intent.id, { suspension_id: "", value: "approve" }), 422, "SUSPENSION_ID_REQUIRED");
    const wrong = await expectRejected(respond(intent.id, { suspension_id: id, value: "maybe" }), 422, "INVALID_RESPONSE_VALUE");
    expect(wrong.body?.valid_choices).toEqual(["approve", "reject"]);
    await expectRejected(respond(intent.id, { suspension_id: id }), 422, "INVALID_RESPONSE_VALUE");
    const other = await expectRejected(respond(intent.id, { suspension_id: randomUUID(), value: "approve" }), 409, "SUSPENSION_MISMATCH");
    expect(JSON.stringify(other.body)).not.toContain(id);
    await expectRejected(respond(intent.id, { suspension_id: id, value: "approve" }, "agent"), 403, "FORBIDDEN");
    // None of the refusals moved the intent.
    expect((await admin.ops.intentsGet({ intent_id: intent.id }))).toMatchObject({ status: "suspended_awaiting_input", version: intent.version });
    for (const key of ["coordinator", "admin"] as const) expect(key).toBeTruthy();
    expect((await respond(intent.id, { suspension_id: id, value: "reject" }, "coordinator")).status).toBe(200);
    const notSuspended = await createIntent(cluster);
    await expectRejected(respond(notSuspended.id, { suspension_id: id, value: "x" }), 409, "NOT_SUSPENDED");
  });

  it("confirm accepts yes/no without choices; text needs a non-empty string; form passes any value through", async () => {
    const confirm = await suspended({ response_type: "confirm", choices: undefined });
    const cid = suspensionOf(confirm).id;
    const bad = await expectRejected(respond(confirm.id, { suspension_id: cid, value: "sure" }), 422, "INVALID_RESPONSE_VALUE");
    expect(bad.body?.valid_choices).toEqual(["yes", "no"]);
    expect((await respond(confirm.id, { suspension_id: cid, value: "no" })).status).toBe(200);

    const text = await suspended({ response_type: "text", choices: undefined });
    const tid = suspensionOf(text).id;
    await expectRejected(respond(text.id, { suspension_id: tid, value: "  " }), 422, "INVALID_RESPONSE_VALUE");
    await expectRejected(respond(text.id, { suspension_id: tid, value: 42 }), 422, "INVALID_RESPONSE_VALUE");
    expect((await respond(text.id, { suspension_id: tid, value: "go ahead" })).data.value).toBe("go ahead");

    const form = await suspended({ response_type: "form", choices: undefined, context: { fields: ["budget"] } });
    const res = await respond(form.id, { suspension_id: suspensionOf(form).id, value: { budget: 12 } });
    expect(res.status).toBe(200);
    expect(suspensionOf(await admin.ops.intentsGet({ intent_id: form.id })).response).toEqual({ budget: 12 });
  });

  it("two concurrent answers: exactly one is accepted", async () => {
    const intent = await suspended();
    const id = suspensionOf(intent).id;
    const answers = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => respond(intent.id, { suspension_id: id, value: i % 2 ? "approve" : "reject" })));
    const statuses = answers.map((a) => (a.status === "fulfilled" ? a.value.status : a.reason instanceof IntentmeshError ? a.reason.status : a.reason));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(5);
    expect(await eventsOfType(intent.id, "intent.resumed")).toHaveLength(1);
  });
});

describe("the official clients' sequence: status, _suspension patch, intent.suspended (CLIENTS.md §1)", () => {
  it("ends in one tracked suspension with server times and one intent.suspended, timed out like any other", async () => {
    const intent = await createIntent(cluster);
    const headers = { "X-Agent-ID": "py-agent" };
    const pyAgent = cluster.sdk("agent", "py-agent");
    const s1 = await pyAgent.send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "suspended_awaiting_input" } });
    expect(s1.status).toBe(200);
    expect(s1.data.status).toBe("suspended_awaiting_input");
    const id = randomUUID();
    const record = {
      id,
      question: "Pick",
      response_type: "choice",
      choices: CHOICES,
      timeout_seconds: 60,
      fallback_policy: "fail",
      suspended_at: "2001-01-01T00:00:00+00:00",
      expires_at: "2001-01-01T00:01:00+00:00",
    };
    // Raw: the clients' wrapped form {patches: [...]}; the typed client sends the bare array.
    const s2 = await cluster.api(`/intents/${intent.id}/state`, {
      body: { patches: [{ op: "set", path: "_suspension", value: record }] },
      headers: { ...headers, "If-Match": String(s1.data.version) },
      key: "agent",
    });
    expect(s2.status, JSON.stringify(s2.body)).toBe(200);
    const stored = s2.body.state._suspension;
    // The server's clock, not the client's.
    expect(new Date(stored.suspended_at).getTime()).toBe(clock().now().getTime());
    expect(new Date(stored.expires_at).getTime()).toBe(clock().now().getTime() + 60_000);
    const s3 = await pyAgent.send("intentsAppendEvent", {
      intent_id: intent.id,
      body: { event_type: "intent.suspended", actor: "py-agent", payload: { suspension_id: id, question: "Pick" } },
    });
    expect(s3.status).toBe(201);
    expect(await eventsOfType(intent.id, "intent.suspended")).toHaveLength(1);
    expect(s3.data.id).toBe((await eventsOfType(intent.id, "intent.suspended"))[0]!.id);
    // A second record while this one waits is refused; so is a _suspension patch on an active intent.
    await expectRejected(admin.send("intentsPatchState", { intent_id: intent.id, ifMatch: s2.body.version, body: [{ op: "set", path: "_suspension", value: record }] }), 409, "SUSPENSION_ACTIVE");
    const active = await createIntent(cluster);
    await expectRejected(admin.send("intentsPatchState", { intent_id: active.id, ifMatch: active.version, body: [{ op: "set", path: "_suspension", value: record }] }), 400, "PATCH_FAILED");
    await expectRejected(admin.send("intentsAppendEvent", { intent_id: active.id, body: { event_type: "intent.suspended", payload: {} } }), 400, "RESERVED_EVENT_TYPE");

    await vi.waitFor(async () => expect(await tracked(id)).toMatchObject({ status: "waiting" }));
    clock().advance(59_000);
    await cluster.governance.timer.sweep();
    expect((await admin.ops.intentsGet({ intent_id: intent.id })).status).toBe("suspended_awaiting_input");
    clock().advance(1_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    const ended = (await admin.ops.intentsGet({ intent_id: intent.id }));
    expect(ended.status).toBe("abandoned");
    expect(suspensionOf(ended).resolution).toBe("expired");
    expect(await eventsOfType(intent.id, "intent.suspension_expired")).toHaveLength(1);
  });
});

describe("server-side timeouts (ManualClock)", () => {
  it("fail: at expires_at the intent is abandoned, resolution expired, intent.suspension_expired; the sweep is idempotent", async () => {
    const intent = await suspended({ timeout_seconds: 30 });
    const id = suspensionOf(intent).id;
    clock().advance(29_999);
    expect(await cluster.governance.timer.sweep()).toBe(0);
    clock().advance(1);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    expect(await cluster.governance.timer.sweep()).toBe(0);
    const after = (await admin.ops.intentsGet({ intent_id: intent.id }));
    expect(after).toMatchObject({ status: "abandoned", state: { _suspension: { id, resolution: "expired" } } });
    expect((await eventsOfType(intent.id, "intent.suspension_expired"))[0]!.payload).toMatchObject({ suspension_id: id, resolution: "expired", status: "abandoned" });
    expect(await tracked(id)).toMatchObject({ status: "expired", next_due_at: null });
    await expectRejected(respond(intent.id, { suspension_id: id, value: "approve" }), 409, "NOT_SUSPENDED");
  });

  for (const policy of ["complete_with_fallback", "use_default_and_continue"] as const) {
    it(`${policy}: fallback_value becomes the response, resolution expired, intent active`, async () => {
      const intent = await suspended({ timeout_seconds: 10, fallback_policy: policy, fallback_value: "reject" });
      clock().advance(10_000);
      expect(await cluster.governance.timer.sweep()).toBe(1);
      const after = (await admin.ops.intentsGet({ intent_id: intent.id }));
      expect(after.status).toBe("active");
      expect(suspensionOf(after)).toMatchObject({ resolution: "expired", response: "reject" });
      expect(suspensionOf(after).responded_by).toBeUndefined();
    });
  }

  it("a suspension without a deadline is never timed out", async () => {
    const intent = await suspended();
    expect(await tracked(suspensionOf(intent).id)).toMatchObject({ status: "waiting", next_due_at: null });
    clock().advance(365 * 24 * 3600_000);
    await cluster.governance.timer.sweep();
    expect((await admin.ops.intentsGet({ intent_id: intent.id })).status).toBe("suspended_awaiting_input");
  });

  it("retry policy (fixed, client escalation names): re-notifies each interval, runs the escalation step, then the final fallback at interval x max_attempts", async () => {
    const intent = await suspended({
      fallback_policy: undefined,
      retry_policy: {
        max_attempts: 3,
        interval_seconds: 100,
        strategy: "fixed",
        escalation_ladder: [{ attempt: 2, channel_hint: "pager", notify_to: "oncall" }],
        final_fallback_policy: "complete_with_fallback",
      },
      fallback_value: "approve",
      channel_hint: "slack",
    });
    const id = suspensionOf(intent).id;
    expect(new Date(suspensionOf(intent).expires_at!).getTime() - new Date(suspensionOf(intent).suspended_at).getTime()).toBe(300_000);
    expect(suspensionOf(intent).retry_policy?.escalation_ladder).toEqual([{ after_attempt: 2, channel: "pager", notify: "oncall" }]);
    clock().advance(100_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    await vi.waitFor(async () => expect(await eventsOfType(intent.id, "intent.suspension_renotified")).toHaveLength(1));
    expect((await eventsOfType(intent.id, "intent.suspension_renotified"))[0]!.payload).toMatchObject({ suspension_id: id, attempt: 2, max_attempts: 3, channel_hint: "slack" });
    expect(await eventsOfType(intent.id, "intent.suspension_escalated")).toHaveLength(0);
    clock().advance(100_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    await vi.waitFor(async () => expect(await eventsOfType(intent.id, "intent.suspension_escalated")).toHaveLength(1));
    expect((await eventsOfType(intent.id, "intent.suspension_escalated"))[0]!.payload).toMatchObject({ suspension_id: id, after_attempt: 2, channel: "pager", notify: "oncall" });
    expect(await eventsOfType(intent.id, "intent.suspension_renotified")).toHaveLength(2);
    expect((await admin.ops.intentsGet({ intent_id: intent.id })).status).toBe("suspended_awaiting_input");
    clock().advance(100_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    const after = (await admin.ops.intentsGet({ intent_id: intent.id }));
    expect(after).toMatchObject({ status: "active", state: { _suspension: { resolution: "expired", response: "approve" } } });
    // Nothing more fires, and nothing fired twice.
    clock().advance(1_000_000);
    expect(await cluster.governance.timer.sweep()).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(await eventsOfType(intent.id, "intent.suspension_renotified")).toHaveLength(2);
    expect(await eventsOfType(intent.id, "intent.suspension_expired")).toHaveLength(1);
  });

  it("exponential: attempts last interval x 2^(k-1); a timer away for long catches up each step once, capped by expires_at", async () => {
    const intent = await suspended({ fallback_policy: "fail", retry_policy: { max_attempts: 4, interval_seconds: 10, strategy: "exponential" } });
    // Windows 10, 20, 40 (attempts 1-3) begin attempts 2, 3 at 10 s and 30 s; attempt 4 would begin at 70 s, past expires_at (40 s).
    clock().advance(35_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    await vi.waitFor(async () => expect((await eventsOfType(intent.id, "intent.suspension_renotified")).map((e) => e.payload.attempt)).toEqual([2, 3]));
    expect(await tracked(suspensionOf(intent).id)).toMatchObject({ attempt: 3 });
    clock().advance(5_000);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    expect((await admin.ops.intentsGet({ intent_id: intent.id })).status).toBe("abandoned");
  });

  it("abandoning a suspended intent cancels its suspension: resolution cancelled, and the timer fires nothing", async () => {
    const intent = await suspended({ timeout_seconds: 50 });
    const id = suspensionOf(intent).id;
    const res = await admin.send("intentsTransition", { intent_id: intent.id, ifMatch: intent.version, body: { status: "abandoned", reason: "not needed" } });
    expect(res.status).toBe(200);
    expect(suspensionOf(res.data).resolution).toBe("cancelled");
    await vi.waitFor(async () => expect(await tracked(id)).toMatchObject({ status: "cancelled", next_due_at: null }));
    clock().advance(60_000);
    expect(await cluster.governance.timer.sweep()).toBe(0);
    expect(await eventsOfType(intent.id, "intent.suspension_expired")).toHaveLength(0);
  });

  it("an answer that wins the race with the timeout: the timer finds it ended and fires nothing", async () => {
    const intent = await suspended({ timeout_seconds: 20 });
    const id = suspensionOf(intent).id;
    expect((await respond(intent.id, { suspension_id: id, value: "approve" })).status).toBe(200);
    // As if governance had crashed before recording the end: the row waits and is due. (First let
    // the tracker take intent.resumed, applied or skipped, so it does not mark the row again
    // behind the test's back.)
    await trackerCaughtUp();
    await cluster.database.db.execute(sql`update governance.suspensions set status = 'waiting', next_due_at = ${clock().now()} where suspension_id = ${id}`);
    expect(await cluster.governance.timer.sweep()).toBe(1);
    expect((await admin.ops.intentsGet({ intent_id: intent.id }))).toMatchObject({ status: "active", state: { _suspension: { resolution: "responded" } } });
    expect(await eventsOfType(intent.id, "intent.suspension_expired")).toHaveLength(0);
    expect(await tracked(id)).toMatchObject({ status: "ended" });
  });
});

describe("platform default human retry policy (cascade level 3)", () => {
  let withDefault: TestCluster;
  beforeAll(async () => {
    withDefault = await startTestCluster({ defaultRetryPolicy: { max_attempts: 2, interval_seconds: 60, strategy: "fixed", escalation_ladder: [] } });
  });
  afterAll(async () => {
    await withDefault?.stop();
  });

  it("GET /server/config (no key) hands it to the clients' cascade; null where none is configured", async () => {
    for (const path of ["/api/v1/server/config", "/v1/server/config", "/server/config"]) {
      const res = await fetch(`${withDefault.baseUrl}${path}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ protocol_version: "0.1", suspension: { default_retry_policy: { max_attempts: 2, interval_seconds: 60, strategy: "fixed", escalation_ladder: [] } } });
    }
    expect(await (await fetch(`${cluster.baseUrl}/api/v1/server/config`)).json()).toMatchObject({ suspension: { default_retry_policy: null } });
    expect(((await (await fetch(`${cluster.baseUrl}/.well-known/openintent.json`)).json()) as any).capabilities.suspension).toMatchObject({ server_timeouts: true });
  });

  it("applies to a suspension with neither retry_policy nor timeout_seconds; a call-site timeout wins", async () => {
    const client = withDefault.sdk();
    const a = await client.ops.intentsCreate({ body: { title: "a", status: "active" } });
    const res = await client.send("governanceSuspend", { intent_id: a.id, body: { question: "q", response_type: "text", fallback_policy: "fail" } });
    expect(res.status).toBe(201);
    const record = suspensionOf(res.data);
    expect(record.retry_policy).toMatchObject({ max_attempts: 2, interval_seconds: 60, final_fallback_policy: "fail" });
    expect(new Date(record.expires_at!).getTime() - new Date(record.suspended_at).getTime()).toBe(120_000);
    const b = await client.ops.intentsCreate({ body: { title: "b", status: "active" } });
    const own = await client.ops.governanceSuspend({ intent_id: b.id, body: { question: "q", response_type: "text", fallback_policy: "fail", timeout_seconds: 5 } });
    expect(suspensionOf(own).retry_policy).toBeUndefined();
    expect(new Date(suspensionOf(own).expires_at!).getTime() - new Date(suspensionOf(own).suspended_at).getTime()).toBe(5_000);
  });
});
