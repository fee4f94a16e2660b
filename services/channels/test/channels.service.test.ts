import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { expectApiError as expectError } from "../../../test/support/service-harness";
import { UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { findChannel } from "../src/access";
import { channels as channelRows } from "../src/db/schema";
import { registerAgent, startChannelsHarness, type Agent, type ChannelsHarness } from "./harness";

/**
 * The channels service's own rules (spec 2.12, 2.13, 3.2, 4.7 and the retention of 8): channels,
 * the message type rules, addressing, membership, credentials, status and retention, through the
 * typed client of the route catalogue. Channels live in an intent and every channel request is
 * checked against the intent's ACL, so the intents service runs beside it, and the registry
 * (X-Agent-ID bindings, role addressing); nothing else does. What crosses services (an intent's
 * end closing its channels, a departed agent, audit events in the intent's log, SSE) stays in
 * test/e2e/channels.e2e.test.ts.
 */
let harness: ChannelsHarness;
beforeAll(async () => {
  harness = await startChannelsHarness();
});
afterAll(async () => {
  await harness?.stop();
});

/** Registers an agent (with a role) on the agent key. */
const agent = (role: string | null = null): Promise<Agent> => registerAgent(harness, "ag", role);

const activeIntent = async () => (await harness.api("intentsCreate", { body: { title: "an intent", status: "active" } })).ok();
async function channel(intentId: string, body: Record<string, unknown>, who?: Agent) {
  const res = await harness.api("channelsCreate", { ...who?.as, params: { intent_id: intentId }, body });
  expect(res.status, JSON.stringify(res)).toBe(201);
  return res.ok();
}
const post = (channelId: string, who: Agent, body: Record<string, unknown>) => harness.api("channelsSend", { ...who.as, params: { channel_id: channelId }, body });
const pull = (channelId: string, who: Agent, query: Record<string, string> = {}) => harness.api("channelsListMessages", { ...who.as, params: { channel_id: channelId }, query });
const pulled = async (channelId: string, who: Agent, query: Record<string, string> = {}) => (await pull(channelId, who, query)).ok();
const patchChannel = (channelId: string, body: Record<string, unknown>, who?: Agent | "coordinator") =>
  harness.api("channelsPatch", { ...(who === "coordinator" ? { key: "coordinator" as const } : who?.as), params: { channel_id: channelId }, body });
const getChannel = (channelId: string) => harness.api("channelsGet", { params: { channel_id: channelId } });

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
    const create = (intentId: string, body: Record<string, unknown>) => harness.api("channelsCreate", { params: { intent_id: intentId }, body });
    expectError(await create(intent.id, { name: "general" }), 409, "CHANNEL_NAME_TAKEN");
    // Another intent may use the name.
    await channel((await activeIntent()).id, { name: "general" });
    const listed = await harness.api("channelsList", { params: { intent_id: intent.id } });
    expect(listed.ok()).toEqual([expect.objectContaining({ id: created.id })]);
    expect(listed.headers.get("x-next-cursor")).toBeNull();
    expect(listed.headers.get("link")).toBeNull();
    expectError(await create(UNKNOWN_ID, { name: "x" }), 404, "INTENT_NOT_FOUND");
    expectError(await create(intent.id, { name: "" }), 400, "VALIDATION_FAILED");
    expectError(await create(intent.id, { name: "n", member_policy: "open" }), 400, "VALIDATION_FAILED");
  });

  it("lists an intent's channels as a JSON array (the Python client's list_channels), paging in X-Next-Cursor and Link rel=next", async () => {
    const intent = await activeIntent();
    const names = ["c1", "c2", "c3", "c4", "c5"];
    for (const name of names) await channel(intent.id, { name });
    const list = (query: Record<string, string | number>) => harness.api("channelsList", { params: { intent_id: intent.id }, query });
    const seen: string[] = [];
    let query: Record<string, string | number> = { limit: 2 };
    let pages = 0;
    for (;;) {
      const res = await list(query);
      const page = res.ok();
      expect(Array.isArray(page)).toBe(true);
      seen.push(...page.map((c) => c.name));
      pages++;
      const link = res.headers.get("link");
      const cursor = res.headers.get("x-next-cursor");
      if (!link) {
        expect(cursor).toBeNull();
        break;
      }
      // RFC 8288: the next page is this request with after=<cursor>, its other parameters kept.
      const target = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!, "http://gateway");
      expect(target.pathname).toBe(`/api/v1/intents/${intent.id}/channels`);
      expect(target.searchParams.get("after")).toBe(cursor);
      expect(target.searchParams.get("limit")).toBe("2");
      query = Object.fromEntries(target.searchParams);
    }
    // Every channel once (created at one instant of the test clock, so in id order among themselves).
    expect([...seen].sort()).toEqual(names);
    expect(pages).toBe(3);
    // The cursor header alone pages too.
    const first = await list({ limit: 4 });
    const rest = await list({ after: first.headers.get("x-next-cursor")! });
    expect([...first.ok(), ...rest.ok()].map((c) => c.name)).toEqual(seen);
  });

  it("the send path's prepared channel lookup reads every column the schema has, under the same names", async () => {
    const intent = await activeIntent();
    const created = await channel(intent.id, { name: "lookup", member_policy: "explicit", members: ["m-1"], options: { ttl_seconds: 60, audit: true } });
    const ctx = harness.service.channels.ctx;
    const [viaSchema] = await ctx.db.select().from(channelRows).where(eq(channelRows.id, created.id));
    expect(await findChannel(ctx, created.id)).toEqual(viaSchema);
    await expect(findChannel(ctx, UNKNOWN_ID)).rejects.toMatchObject({ status: 404 });
  });

  it("only the creator, a coordinator or an admin change membership or options (rule 7); a closed channel refuses messages but stays readable", async () => {
    const intent = await activeIntent();
    const [owner, other] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "ops", member_policy: "explicit", members: [other.id] }, owner);
    expect(ch.members).toEqual([owner.id, other.id]);
    expectError(await patchChannel(ch.id, { members: [other.id] }, other), 403, "FORBIDDEN");
    expect((await patchChannel(ch.id, { options: { audit: true, max_messages: 5 } }, owner)).ok().options).toEqual({ audit: true, ttl_seconds: null, max_messages: 5 });
    expect((await patchChannel(ch.id, { members: [owner.id] }, "coordinator")).ok().members).toEqual([owner.id]);
    expect((await post(ch.id, owner, { message_type: "notify", payload: { n: 1 } })).status).toBe(201);
    expect((await patchChannel(ch.id, { status: "closed" }, owner)).ok()).toMatchObject({ status: "closed", closed_at: expect.any(String) });
    expectError(await post(ch.id, owner, { payload: { n: 2 } }), 409, "CHANNEL_CLOSED");
    expect((await pulled(ch.id, owner)).map((m) => m.payload)).toEqual([{ n: 1 }]);
    expectError(await patchChannel(ch.id, { status: "open" }, owner), 409, "CHANNEL_CLOSED");
    expect((await harness.api("channelsDelete", { ...owner.as, params: { channel_id: ch.id } })).ok()).toEqual({ status: "closed", channel_id: ch.id });
    expectError(await getChannel(ch.id), 404, "CHANNEL_NOT_FOUND");
  });
});

describe("messages: the type rules of 2.13", () => {
  it("request needs `to` and no correlation_id; broadcast goes to *; notify takes an optional to; each violation is 400 naming the rule", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "rules" });
    const violation = async (body: Record<string, unknown>, rule: string) => {
      expect(expectError(await post(ch.id, a, body), 400, "MESSAGE_RULE_VIOLATED").details.rule).toBe(rule);
    };
    await violation({ message_type: "request", payload: {} }, "to");
    await violation({ message_type: "request", to: "*", payload: {} }, "to");
    await violation({ message_type: "request", to: b.id, correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    await violation({ message_type: "notify", correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    await violation({ message_type: "broadcast", to: b.id, payload: {} }, "to");
    await violation({ message_type: "response", payload: {} }, "correlation_id");
    await violation({ message_type: "response", correlation_id: UNKNOWN_ID, payload: {} }, "correlation_id");
    const broadcast = (await post(ch.id, a, { message_type: "broadcast", payload: { hi: 1 } })).ok();
    expect(broadcast).toMatchObject({ message_type: "broadcast", to: "*", correlation_id: null, status: "delivered", sender: a.id, sequence: 1 });
    // A response must answer a request, not another kind of message.
    await violation({ message_type: "response", correlation_id: broadcast.id, payload: {} }, "correlation_id");
    expect((await post(ch.id, a, { payload: { n: 1 } })).ok()).toMatchObject({ message_type: "notify", to: null });
    // The MCP server's "message" type reads as notify.
    expect((await post(ch.id, a, { message_type: "message", to: b.id, payload: {} })).ok()).toMatchObject({ message_type: "notify", to: b.id });
  });

  it("a request takes several responses, each to the requester with its correlation_id; reply sets both; the requester reads them with its pull", async () => {
    const intent = await activeIntent();
    const [asker, r1, r2] = [await agent(), await agent("reviewer"), await agent("reviewer")];
    const ch = await channel(intent.id, { name: "review" });
    const request = (await post(ch.id, asker, { message_type: "request", to: "role:reviewer", payload: { q: "ok?" } })).ok();
    // Role addressing reaches every agent with that role (rule 4).
    for (const reviewer of [r1, r2]) expect((await pulled(ch.id, reviewer)).map((m) => m.id)).toEqual([request.id]);
    const reply = await harness.api("channelsReply", { ...r1.as, params: { channel_id: ch.id, message_id: request.id }, body: { payload: { a: "yes" } } });
    expect(reply.status).toBe(201);
    const first = reply.ok();
    expect(first).toMatchObject({ message_type: "response", correlation_id: request.id, to: asker.id, sender: r1.id });
    const second = (await post(ch.id, r2, { message_type: "response", correlation_id: request.id, payload: { a: "also yes" } })).ok();
    expect(second).toMatchObject({ to: asker.id, correlation_id: request.id });
    expectError(await post(ch.id, r2, { message_type: "response", correlation_id: request.id, to: r1.id, payload: {} }), 400, "MESSAGE_RULE_VIOLATED");
    const answers = (await pulled(ch.id, asker)).filter((m) => m.correlation_id === request.id);
    expect(answers.map((m) => m.sender)).toEqual([r1.id, r2.id]);
    // The Python client's ask(): since = the request id gives what came after it.
    expect((await pulled(ch.id, asker, { since: request.id })).map((m) => m.id)).toEqual([first.id, second.id]);
  });

  it("a reply to a message id that does not exist, or that the replier cannot read, is 404 MESSAGE_NOT_FOUND (spec 7), as mark-read answers", async () => {
    const intent = await activeIntent();
    const [asker, target, outsider] = [await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "replies" });
    const replyTo = (who: Agent, messageId: string) => harness.api("channelsReply", { ...who.as, params: { channel_id: ch.id, message_id: messageId }, body: { payload: { a: 1 } } });
    expect(expectError(await replyTo(target, UNKNOWN_ID), 404, "MESSAGE_NOT_FOUND").details).toMatchObject({ resource: "message", id: UNKNOWN_ID });
    expectError(await harness.api("channelsMarkRead", { ...target.as, params: { channel_id: ch.id, message_id: UNKNOWN_ID }, body: { status: "read" } }), 404, "MESSAGE_NOT_FOUND");
    // A request addressed to someone else is not the outsider's to answer: as unknown to it as to its GET.
    const request = (await post(ch.id, asker, { message_type: "request", to: target.id, payload: { q: 1 } })).ok();
    expectError(await replyTo(outsider, request.id), 404, "MESSAGE_NOT_FOUND");
    // Nothing was written by the refused replies: the asker sees no response.
    expect((await pulled(ch.id, asker)).filter((m) => m.correlation_id === request.id)).toEqual([]);
    expect((await replyTo(target, request.id)).status).toBe(201);
  });
});

describe("addressing, membership and access", () => {
  it("a direct message reaches only its target; others' pulls do not show it; to filters exactly", async () => {
    const intent = await activeIntent();
    const [a, b, c] = [await agent(), await agent(), await agent()];
    const ch = await channel(intent.id, { name: "dm" });
    const direct = (await post(ch.id, a, { message_type: "request", to: b.id, payload: { secret_plan: "x" } })).ok();
    expect((await pulled(ch.id, b)).map((m) => m.id)).toEqual([direct.id]);
    expect((await pulled(ch.id, a)).map((m) => m.id)).toEqual([direct.id]);
    expect(await pulled(ch.id, c)).toEqual([]);
    expectError(await harness.api("channelsGetMessage", { ...c.as, params: { channel_id: ch.id, message_id: direct.id } }), 404, "MESSAGE_NOT_FOUND");
    // People (operator, coordinator, admin keys acting as themselves) see every message.
    expect((await harness.api("channelsListMessages", { key: "operator", params: { channel_id: ch.id } })).ok()).toHaveLength(1);
    expect(await pulled(ch.id, b, { to: b.id })).toHaveLength(1);
    expect(await pulled(ch.id, b, { to: "*" })).toHaveLength(0);
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
      const refused = expectError(await post(ch.id, a, { payload }), 400, "CREDENTIALS_IN_MESSAGE");
      expect(JSON.stringify(refused)).not.toMatch(/hunter2|k-123|BEGIN PRIVATE/);
    }
    expectError(await post(ch.id, a, { payload: {}, metadata: { token: "abc" } }), 400, "CREDENTIALS_IN_MESSAGE");
    expect(await pulled(ch.id, a)).toEqual([]);
  });

  it("implicit creation: the first message to an unknown name creates the channel with policy intent (rule 10)", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const sendByName = (payload: Record<string, unknown>) => harness.api("channelsSendByName", { ...a.as, params: { intent_id: intent.id, name: "lobby" }, body: { payload } });
    expect((await sendByName({ hello: true })).status).toBe(201);
    const listed = (await harness.api("channelsList", { params: { intent_id: intent.id } })).ok();
    expect(listed).toEqual([expect.objectContaining({ name: "lobby", member_policy: "intent", created_by: a.id, message_count: 1 })]);
    expect((await sendByName({ n: 2 })).ok()).toMatchObject({ channel_id: listed[0]!.id, sequence: 2 });
  });
});

describe("message status (3.2) and retention (8)", () => {
  it("delivered on commit, read on the target's PATCH; the sender cannot acknowledge; expired when expires_at passes and never delivered after", async () => {
    const intent = await activeIntent();
    const [a, b] = [await agent(), await agent()];
    const ch = await channel(intent.id, { name: "status" });
    const at = (ms: number) => new Date(harness.clock.now().getTime() + ms).toISOString();
    const markRead = (who: Agent, messageId: string, status: string) => harness.api("channelsMarkRead", { ...who.as, params: { channel_id: ch.id, message_id: messageId }, body: { status } });
    const msg = (await post(ch.id, a, { message_type: "request", to: b.id, payload: {}, expires_at: at(60_000) })).ok();
    expect(msg).toMatchObject({ status: "delivered", read_at: null });
    expectError(await markRead(a, msg.id, "read"), 403, "FORBIDDEN");
    expectError(await markRead(b, msg.id, "delivered"), 400, "VALIDATION_FAILED");
    expect((await markRead(b, msg.id, "read")).ok()).toMatchObject({ status: "read", read_at: harness.clock.now().toISOString().replace("Z", "+00:00") });

    const fleeting = (await post(ch.id, a, { message_type: "request", to: b.id, payload: {}, expires_at: at(1000) })).ok();
    harness.clock.advance(1500);
    await harness.service.channels.sweeper.sweep();
    expect((await pulled(ch.id, b)).map((m) => m.id)).toEqual([msg.id]);
    expect((await harness.api("channelsGetMessage", { ...b.as, params: { channel_id: ch.id, message_id: fleeting.id } })).ok().status).toBe("expired");
    expectError(await harness.api("channelsReply", { ...b.as, params: { channel_id: ch.id, message_id: fleeting.id }, body: { payload: {} } }), 409, "REQUEST_EXPIRED");
    expectError(await post(ch.id, a, { payload: {}, expires_at: at(-1) }), 400, "VALIDATION_FAILED");
  });

  it("max_messages evicts the oldest; ttl_seconds closes the channel that long after its last message", async () => {
    const intent = await activeIntent();
    const a = await agent();
    const ch = await channel(intent.id, { name: "small", options: { max_messages: 3, ttl_seconds: 60 } });
    for (let n = 1; n <= 5; n++) await post(ch.id, a, { payload: { n } });
    expect((await pulled(ch.id, a)).map((m) => (m.payload as { n: number }).n)).toEqual([3, 4, 5]);
    expect((await getChannel(ch.id)).ok()).toMatchObject({ message_count: 5, status: "open" });
    harness.clock.advance(59_000);
    await harness.service.channels.sweeper.sweep();
    expect((await getChannel(ch.id)).ok().status).toBe("open");
    harness.clock.advance(2_000);
    await harness.service.channels.sweeper.sweep();
    expect((await getChannel(ch.id)).ok()).toMatchObject({ status: "closed", closed_at: expect.any(String) });
  });
});
