import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliverPolicy } from "@nats-io/jetstream";
import { SystemEvent, systemEventStream, type ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, uniqueTag, UNKNOWN_ID } from "../support/e2e-helpers";
import { SseClient } from "../support/sse";
import { eq } from "drizzle-orm";
import { findChannel } from "../../services/channels/src/access";
import { channels as channelRows } from "../../services/channels/src/db/schema";

/** Channels and messages (spec 2.12, 2.13, 3.2, 3.3, 4.7) through the gateway. */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;

/** Registers an agent (with a role) on the agent key and returns the headers it acts with. */
async function agent(role: string | null = null): Promise<{ id: string; headers: Record<string, string> }> {
  const id = uniqueTag("ag");
  const res = await cluster.api("/agents", { body: { agent_id: id, ...(role ? { role_id: role } : {}) }, key: "agent" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id, headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": id } };
}
const as = (who: { headers: Record<string, string> }, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) => ({
  ...init,
  key: null,
  headers: { ...who.headers, ...(init.headers ?? {}) },
});

async function activeIntent() {
  return createIntent(cluster, { status: "active" });
}
async function channel(intentId: string, body: Record<string, unknown>, who?: { headers: Record<string, string> }) {
  const res = await cluster.api(`/intents/${intentId}/channels`, who ? as(who, { body }) : { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}
const post = (channelId: string, who: { headers: Record<string, string> }, body: Record<string, unknown>) => cluster.api(`/channels/${channelId}/messages`, as(who, { body }));
const pull = (channelId: string, who: { headers: Record<string, string> }, query = "") => cluster.api(`/channels/${channelId}/messages${query}`, as(who));

describe("channels (2.12, 4.7)", () => {
  it("creates a channel with the 2.12 fields and defaults; the name is unique within the intent (409)", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const created = await channel(intent.id, { name: "general" }, a);
    expect(created).toEqual({
      id: expect.any(String),
      intent_id: intent.id,
      task_id: null,
      name: "general",
      created_by: a.id,
      members: [],
      member_policy: "intent",
      options: { audit: false, ttl_seconds: null, max_messages: 1000 },
      status: "open",
      created_at: expect.any(String),
      closed_at: null,
      message_count: 0,
      last_message_at: null,
    });
    expectError(await cluster.api(`/intents/${intent.id}/channels`, { body: { name: "general" } }), 409, "CHANNEL_NAME_TAKEN");
    // Another intent may use the name.
    await channel((await activeIntent()).id, { name: "general" });
    const listed = await cluster.api(`/intents/${intent.id}/channels`);
    expect(listed.body).toEqual([expect.objectContaining({ id: created.id })]);
    expect(listed.headers.get("x-next-cursor")).toBeNull();
    expect(listed.headers.get("link")).toBeNull();
    expectError(await cluster.api(`/intents/${UNKNOWN_ID}/channels`, { body: { name: "x" } }), 404, "INTENT_NOT_FOUND");
    expectError(await cluster.api(`/intents/${intent.id}/channels`, { body: { name: "" } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api(`/intents/${intent.id}/channels`, { body: { name: "n", member_policy: "open" } }), 400, "VALIDATION_FAILED");
  });

  it("lists an intent's channels as a JSON array (the Python client's list_channels), paging in X-Next-Cursor and Link rel=next", async () => {
    const intent = await activeIntent();
    const names = ["c1", "c2", "c3", "c4", "c5"];
    for (const name of names) await channel(intent.id, { name });
    const seen: string[] = [];
    let path: string | null = `/api/v1/intents/${intent.id}/channels?limit=2`;
    let pages = 0;
    while (path) {
      const res = await cluster.api(path);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      seen.push(...res.body.map((c: any) => c.name));
      pages++;
      const link = res.headers.get("link");
      const cursor = res.headers.get("x-next-cursor");
      if (!link) {
        expect(cursor).toBeNull();
        break;
      }
      // RFC 8288: the next page is this request with after=<cursor>, its other parameters kept.
      const target = /^<([^>]+)>; rel="next"$/.exec(link)![1]!;
      expect(new URL(target, cluster.baseUrl).searchParams.get("after")).toBe(cursor);
      expect(new URL(target, cluster.baseUrl).searchParams.get("limit")).toBe("2");
      path = target;
    }
    // Every channel once (created at one instant of the test clock, so in id order among themselves).
    expect([...seen].sort()).toEqual(names);
    expect(pages).toBe(3);
    // The cursor header alone pages too.
    const first = await cluster.api(`/intents/${intent.id}/channels?limit=4`);
    const rest = await cluster.api(`/intents/${intent.id}/channels?after=${first.headers.get("x-next-cursor")}`);
    expect([...first.body, ...rest.body].map((c: any) => c.name)).toEqual(seen);
  });

  it("the send path's prepared channel lookup reads every column the schema has, under the same names", async () => {
    const intent = await activeIntent();
    const created = await channel(intent.id, { name: "lookup", member_policy: "explicit", members: ["m-1"], options: { ttl_seconds: 60, audit: true } });
    const ctx = cluster.channels.ctx;
    const [viaSchema] = await ctx.db.select().from(channelRows).where(eq(channelRows.id, created.id));
    expect(await findChannel(ctx, created.id)).toEqual(viaSchema);
    await expect(findChannel(ctx, UNKNOWN_ID)).rejects.toMatchObject({ status: 404 });
  });

  it("only the creator, a coordinator or an admin change membership or options (rule 7); a closed channel refuses messages but stays readable", async () => {
    const intent = await activeIntent();
    const [owner, other] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "ops", member_policy: "explicit", members: [other.id] }, owner);
    expect(ch.members).toEqual([owner.id, other.id]);
    expectError(await cluster.api(`/channels/${ch.id}`, as(other, { method: "PATCH", body: { members: [other.id] } })), 403, "FORBIDDEN");
    const patched = await cluster.api(`/channels/${ch.id}`, as(owner, { method: "PATCH", body: { options: { audit: true, max_messages: 5 } } }));
    expect(patched.body.options).toEqual({ audit: true, ttl_seconds: null, max_messages: 5 });
    expect((await cluster.api(`/channels/${ch.id}`, { method: "PATCH", body: { members: [owner.id] }, key: "coordinator" })).body.members).toEqual([owner.id]);
    expect((await post(ch.id, owner, { message_type: "notify", payload: { n: 1 } })).status).toBe(201);
    const closed = await cluster.api(`/channels/${ch.id}`, as(owner, { method: "PATCH", body: { status: "closed" } }));
    expect(closed.body).toMatchObject({ status: "closed", closed_at: expect.any(String) });
    expectError(await post(ch.id, owner, { payload: { n: 2 } }), 409, "CHANNEL_CLOSED");
    expect((await pull(ch.id, owner)).body.map((m: any) => m.payload)).toEqual([{ n: 1 }]);
    expectError(await cluster.api(`/channels/${ch.id}`, as(owner, { method: "PATCH", body: { status: "open" } })), 409, "CHANNEL_CLOSED");
    expect((await cluster.api(`/channels/${ch.id}`, as(owner, { method: "DELETE" }))).body).toEqual({ status: "closed", channel_id: ch.id });
    expectError(await cluster.api(`/channels/${ch.id}`), 404, "CHANNEL_NOT_FOUND");
  });
});

describe("messages: the type rules of 2.13", () => {
  it("request needs `to` and no correlation_id; broadcast goes to *; notify takes an optional to; each violation is 400 naming the rule", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "rules" });
    const violation = async (body: Record<string, unknown>, rule: string) => {
      const res = await post(ch.id, a, body);
      expectError(res, 400, "MESSAGE_RULE_VIOLATED");
      expect(res.body.details.rule).toBe(rule);
    };
    await violation({ message_type: "request", payload: {} }, "to");
    await violation({ message_type: "request", to: "*", payload: {} }, "to");
    await violation({ message_type: "request", to: b.id, correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    await violation({ message_type: "notify", correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    await violation({ message_type: "broadcast", to: b.id, payload: {} }, "to");
    await violation({ message_type: "response", payload: {} }, "correlation_id");
    await violation({ message_type: "response", correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    const broadcast = await post(ch.id, a, { message_type: "broadcast", payload: { hi: 1 } });
    expect(broadcast.body).toMatchObject({ message_type: "broadcast", to: "*", correlation_id: null, status: "delivered", sender: a.id, sequence: 1 });
    // A response must answer a request, not another kind of message.
    await violation({ message_type: "response", correlation_id: broadcast.body.id, payload: {} }, "correlation_id");
    const notify = await post(ch.id, a, { payload: { n: 1 } });
    expect(notify.body).toMatchObject({ message_type: "notify", to: null });
    // The MCP server's "message" type reads as notify.
    expect((await post(ch.id, a, { message_type: "message", to: b.id, payload: {} })).body).toMatchObject({ message_type: "notify", to: b.id });
  });

  it("a request takes several responses, each to the requester with its correlation_id; reply sets both; the requester reads them with its pull", async () => {
    const intent = await activeIntent();
    const [asker, r1, r2] = [await agent(), await agent("reviewer"), await agent("reviewer")];
    const ch = await channel(intent.id, { name: "review" });
    const request = await post(ch.id, asker, { message_type: "request", to: "role:reviewer", payload: { q: "ok?" } });
    expect(request.status, JSON.stringify(request.body)).toBe(201);
    // Role addressing reaches every agent with that role (rule 4).
    for (const reviewer of [r1, r2]) expect((await pull(ch.id, reviewer)).body.map((m: any) => m.id)).toEqual([request.body.id]);
    const first = await cluster.api(`/channels/${ch.id}/messages/${request.body.id}/reply`, as(r1, { body: { payload: { a: "yes" } } }));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ message_type: "response", correlation_id: request.body.id, to: asker.id, sender: r1.id });
    const second = await post(ch.id, r2, { message_type: "response", correlation_id: request.body.id, payload: { a: "also yes" } });
    expect(second.body).toMatchObject({ to: asker.id, correlation_id: request.body.id });
    const wrongTo = await post(ch.id, r2, { message_type: "response", correlation_id: request.body.id, to: r1.id, payload: {} });
    expectError(wrongTo, 400, "MESSAGE_RULE_VIOLATED");
    const answers = (await pull(ch.id, asker)).body.filter((m: any) => m.correlation_id === request.body.id);
    expect(answers.map((m: any) => m.sender)).toEqual([r1.id, r2.id]);
    // The Python client's ask(): since = the request id gives what came after it.
    expect((await pull(ch.id, asker, `?since=${request.body.id}`)).body.map((m: any) => m.id)).toEqual([first.body.id, second.body.id]);
  });

  it("a reply to a message id that does not exist, or that the replier cannot read, is 404 MESSAGE_NOT_FOUND (spec 7), as mark-read answers", async () => {
    const intent = await activeIntent();
    const [asker, target, outsider] = [await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "replies" });
    const unknown = await cluster.api(`/channels/${ch.id}/messages/${UNKNOWN_ID}/reply`, as(target, { body: { payload: { a: 1 } } }));
    expectError(unknown, 404, "MESSAGE_NOT_FOUND");
    expect(unknown.body.details).toMatchObject({ resource: "message", id: UNKNOWN_ID });
    expectError(await cluster.api(`/channels/${ch.id}/messages/${UNKNOWN_ID}`, { method: "PATCH", ...as(target, { body: { status: "read" } }) }), 404, "MESSAGE_NOT_FOUND");
    // A request addressed to someone else is not the outsider's to answer: as unknown to it as to its GET.
    const request = await post(ch.id, asker, { message_type: "request", to: target.id, payload: { q: 1 } });
    expect(request.status).toBe(201);
    expectError(await cluster.api(`/channels/${ch.id}/messages/${request.body.id}/reply`, as(outsider, { body: { payload: { a: 1 } } })), 404, "MESSAGE_NOT_FOUND");
    // Nothing was written by the refused replies: the asker sees no response.
    expect((await pull(ch.id, asker)).body.filter((m: any) => m.correlation_id === request.body.id)).toEqual([]);
    expect((await cluster.api(`/channels/${ch.id}/messages/${request.body.id}/reply`, as(target, { body: { payload: { a: 1 } } }))).status).toBe(201);
  });
});

describe("addressing, membership and access", () => {
  it("a direct message reaches only its target; others' pulls do not show it; to filters exactly", async () => {
    const intent = await activeIntent();
    const [a, b, c] = [await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "dm" });
    const direct = await post(ch.id, a, { message_type: "request", to: b.id, payload: { secret_plan: "x" } });
    expect(direct.status).toBe(201);
    expect((await pull(ch.id, b)).body.map((m: any) => m.id)).toEqual([direct.body.id]);
    expect((await pull(ch.id, a)).body.map((m: any) => m.id)).toEqual([direct.body.id]);
    expect((await pull(ch.id, c)).body).toEqual([]);
    expectError(await cluster.api(`/channels/${ch.id}/messages/${direct.body.id}`, as(c)), 404, "MESSAGE_NOT_FOUND");
    // People (operator, coordinator, admin keys acting as themselves) see every message.
    expect((await cluster.api(`/channels/${ch.id}/messages`, { key: "operator" })).body).toHaveLength(1);
    expect((await pull(ch.id, b, `?to=${encodeURIComponent(b.id)}`)).body).toHaveLength(1);
    expect((await pull(ch.id, b, "?to=*")).body).toHaveLength(0);
  });

  it("explicit policy: a non-member can neither send nor be addressed (403 both ways), nor read (rules 3, 6)", async () => {
    const intent = await activeIntent();
    const [member, outsider] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "closed-group", member_policy: "explicit" }, member);
    expectError(await post(ch.id, outsider, { payload: { hi: 1 } }), 403, "NOT_A_MEMBER");
    expectError(await post(ch.id, member, { message_type: "request", to: outsider.id, payload: {} }), 403, "NOT_A_MEMBER");
    expectError(await pull(ch.id, outsider), 403, "NOT_A_MEMBER");
    expect((await post(ch.id, member, { message_type: "notify", payload: { ok: true } })).status).toBe(201);
  });

  it("no cross-intent messages (rule 8); sender must agree with X-Agent-ID; credentials are refused (5.8) and nothing is stored", async () => {
    const [one, two] = [await activeIntent(), await activeIntent()];
    const a = await agent();
    const ch = await channel(one.id, { name: "x" });
    expectError(await post(ch.id, a, { intent_id: two.id, payload: {} }), 403, "CROSS_INTENT_MESSAGE");
    expectError(await post(ch.id, a, { sender: "someone-else", payload: {} }), 400, "VALIDATION_FAILED");
    for (const payload of [{ password: "hunter2" }, { nested: { api_key: "k-123" } }, { list: [{ Authorization: "x" }] }, { key: "-----BEGIN PRIVATE KEY-----\nabc" }]) {
      const res = await post(ch.id, a, { payload });
      expectError(res, 400, "CREDENTIALS_IN_MESSAGE");
      expect(JSON.stringify(res.body)).not.toMatch(/hunter2|k-123|BEGIN PRIVATE/);
    }
    expectError(await post(ch.id, a, { payload: {}, metadata: { token: "abc" } }), 400, "CREDENTIALS_IN_MESSAGE");
    expect((await pull(ch.id, a)).body).toEqual([]);
  });

  it("implicit creation: the first message to an unknown name creates the channel with policy intent (rule 10)", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const sent = await cluster.api(`/intents/${intent.id}/channels/lobby/messages`, as(a, { body: { payload: { hello: true } } }));
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const listed = (await cluster.api(`/intents/${intent.id}/channels`)).body;
    expect(listed).toEqual([expect.objectContaining({ name: "lobby", member_policy: "intent", created_by: a.id, message_count: 1 })]);
    const again = await cluster.api(`/intents/${intent.id}/channels/lobby/messages`, as(a, { body: { payload: { n: 2 } } }));
    expect(again.body).toMatchObject({ channel_id: listed[0].id, sequence: 2 });
  });
});

describe("message status (3.2) and retention (8)", () => {
  it("delivered on commit, read on the target's PATCH; the sender cannot acknowledge; expired when expires_at passes and never delivered after", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "status" });
    const msg = await post(ch.id, a, { message_type: "request", to: b.id, payload: {}, expires_at: new Date(clock().now().getTime() + 60_000).toISOString() });
    expect(msg.body).toMatchObject({ status: "delivered", read_at: null });
    expectError(await cluster.api(`/channels/${ch.id}/messages/${msg.body.id}`, as(a, { method: "PATCH", body: { status: "read" } })), 403, "FORBIDDEN");
    expectError(await cluster.api(`/channels/${ch.id}/messages/${msg.body.id}`, as(b, { method: "PATCH", body: { status: "delivered" } })), 400, "VALIDATION_FAILED");
    const read = await cluster.api(`/channels/${ch.id}/messages/${msg.body.id}`, as(b, { method: "PATCH", body: { status: "read" } }));
    expect(read.body).toMatchObject({ status: "read", read_at: clock().now().toISOString().replace("Z", "+00:00") });

    const fleeting = await post(ch.id, a, { message_type: "request", to: b.id, payload: {}, expires_at: new Date(clock().now().getTime() + 1000).toISOString() });
    clock().advance(1500);
    await cluster.channels.sweeper.sweep();
    expect((await pull(ch.id, b)).body.map((m: any) => m.id)).toEqual([msg.body.id]);
    expect((await cluster.api(`/channels/${ch.id}/messages/${fleeting.body.id}`, as(b))).body.status).toBe("expired");
    expectError(await cluster.api(`/channels/${ch.id}/messages/${fleeting.body.id}/reply`, as(b, { body: { payload: {} } })), 409, "REQUEST_EXPIRED");
    expectError(await post(ch.id, a, { payload: {}, expires_at: new Date(clock().now().getTime() - 1).toISOString() }), 400, "VALIDATION_FAILED");
  });

  it("max_messages evicts the oldest; ttl_seconds closes the channel that long after its last message", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const ch = await channel(intent.id, { name: "small", options: { max_messages: 3, ttl_seconds: 60 } });
    for (let n = 1; n <= 5; n++) await post(ch.id, a, { payload: { n } });
    expect((await pull(ch.id, a)).body.map((m: any) => m.payload.n)).toEqual([3, 4, 5]);
    expect((await cluster.api(`/channels/${ch.id}`)).body).toMatchObject({ message_count: 5, status: "open" });
    clock().advance(59_000);
    await cluster.channels.sweeper.sweep();
    expect((await cluster.api(`/channels/${ch.id}`)).body.status).toBe("open");
    clock().advance(2_000);
    await cluster.channels.sweeper.sweep();
    expect((await cluster.api(`/channels/${ch.id}`)).body).toMatchObject({ status: "closed", closed_at: expect.any(String) });
  });
});

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("lifecycle across services (3.1, 3.2, 3.3)", () => {
  it("an intent completed closes its channels and expires their unread messages", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "work" });
    const pending = await post(ch.id, a, { message_type: "request", to: b.id, payload: {} });
    expect((await cluster.api(`/intents/${intent.id}/status`, { body: { status: "completed" }, headers: { "If-Match": String(intent.version) } })).status).toBe(200);
    await until(async () => ((await cluster.api(`/channels/${ch.id}`)).body.status === "closed" ? true : undefined), "closure");
    expect((await cluster.api(`/channels/${ch.id}/messages/${pending.body.id}`)).body.status).toBe("expired");
    expectError(await post(ch.id, a, { payload: {} }), 409, "CHANNEL_CLOSED");
    expectError(await cluster.api(`/intents/${intent.id}/channels`, { body: { name: "late" } }), 409, "INTENT_ENDED");
  });

  it("a deregistered agent leaves every member list with a departure notice, and the requests addressed to it expire", async () => {
    const intent = await activeIntent();
    const [a, leaving] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "team", member_policy: "explicit", members: [leaving.id] }, a);
    const ask = await post(ch.id, a, { message_type: "request", to: leaving.id, payload: {} });
    expect(ask.status).toBe(201);
    const gone = await cluster.api(`/agents/${leaving.id}`, as(leaving, { method: "DELETE" }));
    expect(gone.status, JSON.stringify(gone.body)).toBe(200);
    const notice = await until(async () => (await pull(ch.id, a)).body.find((m: any) => m.payload.event === "member_departed"), "departure notice");
    expect(notice).toMatchObject({ message_type: "notify", sender: "system:channels", payload: { agent_id: leaving.id, reason: "deregistered" } });
    expect((await cluster.api(`/channels/${ch.id}`)).body.members).toEqual([a.id]);
    expect((await cluster.api(`/channels/${ch.id}/messages/${ask.body.id}`)).body.status).toBe("expired");
  });
});

describe("audit (rule 12, part 6)", () => {
  it("an audit channel's messages become channel_message events in the intent's log, with the trace id; others put nothing there", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const audited = await channel(intent.id, { name: "audited", options: { audit: true } });
    const quiet = await channel(intent.id, { name: "quiet" });
    await post(quiet.id, a, { payload: { n: 0 } });
    const sent = await post(audited.id, a, { message_type: "broadcast", payload: { n: 1 }, metadata: { trace_id: "trace-42" } });
    const logged = await until(async () => (await allEvents(cluster, intent.id)).find((e) => e.event_type === "channel_message"), "channel_message");
    expect(logged).toMatchObject({
      id: sent.body.id,
      actor: a.id,
      trace_id: "trace-42",
      payload: { channel_id: audited.id, channel_name: "audited", message_id: sent.body.id, message_type: "broadcast", to: "*", payload: { n: 1 } },
    });
    expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "channel_message")).toHaveLength(1);
    // On the wire of the system-event path.
    const stream = cluster.bus.streamName(systemEventStream.name);
    const consumer = await cluster.bus.js.consumers.get(stream, { filter_subjects: cluster.bus.subject(`im.sys.intent.${intent.id}.>`), deliver_policy: DeliverPolicy.All });
    const batch = await consumer.fetch({ max_messages: 10, expires: 1000 });
    const seen: SystemEvent[] = [];
    for await (const msg of batch) {
      seen.push(SystemEvent.parse(msg.json()));
      if (msg.info.pending === 0) break;
    }
    expect(seen.map((e) => [e.source, e.event_type, e.id])).toEqual([["channels", "channel_message", sent.body.id]]);
  });
});

describe("GET /subscribe/channels/{id} (4.10, rule 11)", () => {
  it("streams channel_message frames with the full message to those who may read it, each agent only what it may see; Last-Event-ID resumes", async () => {
    const intent = await activeIntent();
    const [a, b, c, outsider] = [await agent(), await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "live", member_policy: "explicit", members: [b.id, c.id] }, a);
    const url = (query = "") => `${cluster.baseUrl}/api/v1/subscribe/channels/${ch.id}${query}`;
    const denied = await SseClient.open(url(), outsider.headers);
    expect(denied.status).toBe(403);
    const sse = await SseClient.open(url(), b.headers);
    expect(sse.status).toBe(200);
    try {
      const toC = await post(ch.id, a, { message_type: "request", to: c.id, payload: { only: "c" } });
      const all = await post(ch.id, a, { message_type: "broadcast", payload: { to: "all" } });
      const toB = await post(ch.id, a, { message_type: "request", to: b.id, payload: { only: "b" } });
      await sse.waitFor((client) => client.events.some((e) => e.data.id === toB.body.id));
      expect(sse.events.map((e) => [e.event, e.id, e.data.id])).toEqual([
        ["channel_message", String(all.body.sequence), all.body.id],
        ["channel_message", String(toB.body.sequence), toB.body.id],
      ]);
      expect(sse.events[0]!.data).toMatchObject({ channel_id: ch.id, sender: a.id, to: "*", payload: { to: "all" }, status: "delivered" });
      expect(sse.events.some((e) => e.data.id === toC.body.id)).toBe(false);
    } finally {
      await sse.close();
    }
    // Resuming after the first message replays what came after it that this agent may see.
    const resumed = await SseClient.open(url(), { ...c.headers, "Last-Event-ID": "1" });
    try {
      await resumed.waitFor((client) => client.events.length >= 1);
      expect(resumed.events.map((e) => e.data.payload)).toEqual([{ to: "all" }]);
    } finally {
      await resumed.close();
    }
  });
});
