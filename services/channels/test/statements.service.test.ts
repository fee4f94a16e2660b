import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { streams, writeCheckCommands, type Caller } from "@intentmesh/contracts";
import { IntentWriteChecks, type WriteVerdict } from "@intentmesh/service";
import { UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { expectApiError as expectError } from "../../../test/support/service-harness";
import { channels as channelRows } from "../src/db/schema";
import { registerAgent, startCountingChannelsHarness, type Agent, type CountingHarness } from "./harness";

/**
 * The work a message costs, counted rather than timed (issue 32: half the CPU per request): the
 * statements the channels and intents services send to PostgreSQL for one message, the requests
 * channels asks of the intents service, and what the lifecycle consumers do for events they have
 * nothing to apply. A regression of any of these savings fails here; the rules they keep (access,
 * governance, channel rules, in that order) are held beside them.
 */
let harness: CountingHarness;
beforeAll(async () => {
  harness = await startCountingChannelsHarness();
});
afterAll(async () => {
  await harness?.stop();
});

const admin = () => harness.sdk("admin");
const activeIntent = () => admin().ops.intentsCreate({ body: { title: "counted", status: "active" } });
const post = (channelId: string, who: Agent, body: Record<string, unknown>) => harness.api("channelsSend", { ...who.as, params: { channel_id: channelId }, body });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Statements with bound values and names cut to their first words, for a readable failure. */
const shapes = (statements: string[]) => statements.map((text) => text.replace(/\s+/g, " ").trim().slice(0, 160));

/**
 * Runs `work` with outbox relays paused (a relay's pass publishes what a request committed, on
 * its own timer: counted by bench/, not by the request) once the services are quiet, and answers
 * the statements each service sent during it and the intents subjects channels asked.
 */
async function counted(paused: ("channels" | "intents")[], work: () => Promise<void>) {
  const relays = paused.map((name) => harness.service[name].relay);
  for (const relay of relays) await relay.stop();
  const asked: string[] = [];
  const sub = harness.bus.nc.subscribe(harness.bus.subject("im.intents.>"), { callback: (_err, msg) => void asked.push(msg.subject) });
  try {
    // What the setup started (consumers applying its events) ends before the count begins.
    for (let quiet = 0; quiet < 3; ) {
      await sleep(100);
      const left = harness.takeStatements();
      quiet = left.channels.length === 0 && (paused.includes("intents") ? left.intents.length === 0 : true) ? quiet + 1 : 0;
    }
    asked.length = 0;
    await work();
    await harness.bus.nc.flush();
    return { ...harness.takeStatements(), asked };
  } finally {
    sub.unsubscribe();
    for (const relay of relays) relay.start();
  }
}

/** Resolves once a durable of the channels service has acknowledged everything its stream holds for it. */
async function consumed(durable: string) {
  const stream = harness.bus.streamName(streams.intents.name);
  for (let i = 0; i < 200; i++) {
    const info = await harness.bus.jsm.consumers.info(stream, durable);
    if (info.num_pending === 0 && info.num_ack_pending === 0) return;
    await sleep(25);
  }
  throw new Error(`${durable} still has messages to apply`);
}

describe("the work of one message (issue 32)", () => {
  it("a message to a channel the service has sent to: one statement in channels, no transaction; intents answers access and governance in one request and one statement", async () => {
    const sender = await registerAgent(harness, "counted");
    const intent = await activeIntent();
    const channel = await admin().ops.channelsCreate({ intent_id: intent.id, body: { name: "counted" } });
    // The first message reads the channel's row (and prepares the named statements); the next ones write only.
    const first = await counted(["channels", "intents"], async () => {
      expect((await post(channel.id, sender, { payload: { n: 0 } })).status).toBe(201);
    });
    expect(shapes(first.channels)).toEqual([expect.stringMatching(/^select id, intent_id as "intentId"/), expect.stringMatching(/^with c as \( update channels\.channels set message_count/)]);
    const work = await counted(["channels", "intents"], async () => {
      expect((await post(channel.id, sender, { payload: { n: 1 } })).status).toBe(201);
    });
    expect(shapes(work.channels)).toEqual([expect.stringMatching(/^with c as \( update channels\.channels set message_count/)]);
    expect(work.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
    // An intent with neither an ACL nor a governance policy: one primary-key read.
    expect(shapes(work.intents)).toEqual([expect.stringMatching(/^select i\.id as intent_id, i\.acl_policy, .* i\.governance_policy/)]);
  });

  it("a read of a channel's messages reads the channel's row once: for the access check and the handler both", async () => {
    const intent = await activeIntent();
    const channel = await admin().ops.channelsCreate({ intent_id: intent.id, body: { name: "read-once" } });
    const read = () => harness.api("channelsListMessages", { params: { channel_id: channel.id }, query: {} });
    expect((await read()).status).toBe(200);
    const work = await counted(["channels", "intents"], async () => {
      expect((await read()).status).toBe(200);
    });
    expect(shapes(work.channels)).toEqual([expect.stringMatching(/^select id, intent_id as "intentId"/), expect.stringMatching(/^select "id", "channel_id", "intent_id", "sequence"/)]);
    expect(work.asked).toEqual([harness.bus.subject("im.intents.acl.check")]);
  });

  it("a remembered channel row decides nothing alone: a change made elsewhere (another replica) binds the next message", async () => {
    const member = await registerAgent(harness, "member");
    const joining = await registerAgent(harness, "joining");
    const intent = await activeIntent();
    const channel = await admin().ops.channelsCreate({ intent_id: intent.id, body: { name: "elsewhere", member_policy: "explicit", members: [member.id] } });
    // What another replica's PATCH, closure or DELETE writes, behind this process's back.
    const elsewhere = (change: ReturnType<typeof sql>) => harness.database.db.execute(sql`update channels.channels set ${change}, revision = revision + 1 where id = ${channel.id}`);
    expect((await post(channel.id, member, { payload: { n: 1 } })).status).toBe(201);
    expectError(await post(channel.id, joining, { payload: {} }), 403, "NOT_A_MEMBER");
    await elsewhere(sql`members = ${`{${member.id},${joining.id}}`}::text[]`);
    expect((await post(channel.id, joining, { payload: { n: 2 } })).status).toBe(201);
    await elsewhere(sql`members = ${`{${joining.id}}`}::text[]`);
    expectError(await post(channel.id, member, { payload: {} }), 403, "NOT_A_MEMBER");
    // A refusal is the current row's first: not a member before credentials.
    expectError(await post(channel.id, member, { payload: { token: "abcdefghijkl" } }), 403, "NOT_A_MEMBER");
    await harness.database.db.execute(sql`update channels.channels set status = 'closed', closed_at = now() where id = ${channel.id}`);
    expectError(await post(channel.id, joining, { payload: {} }), 409, "CHANNEL_CLOSED");
    await harness.database.db.execute(sql`delete from channels.channels where id = ${channel.id}`);
    expectError(await post(channel.id, joining, { payload: {} }), 404, "CHANNEL_NOT_FOUND");
    const listed = await harness.database.db.execute(sql`select sequence from channels.messages where channel_id = ${channel.id} order by sequence`);
    expect(rowsOf<{ sequence: string | number }>(listed).map((row) => Number(row.sequence))).toEqual([1, 2]);
  });

  it("the checks keep their order: access first, then the channel's rules, then governance", async () => {
    const allowed = await registerAgent(harness, "allowed");
    const other = await registerAgent(harness, "other");
    const intent = await activeIntent();
    const channel = await admin().ops.channelsCreate({ intent_id: intent.id, body: { name: "ordered" } });
    expect((await admin().send("governancePolicySet", { intent_id: intent.id, ifMatch: intent.version, body: { allowed_agents: [allowed.id] } })).status).toBe(200);
    const secret = { payload: { password: "hunter2hunter2" } };
    expect((await post(channel.id, allowed, { payload: { ok: true } })).status).toBe(201);
    // Governance refuses the other agent, after the channel's own rules (credentials: 400).
    expectError(await post(channel.id, other, { payload: { ok: true } }), 403, "GOVERNANCE_VIOLATION");
    expectError(await post(channel.id, other, secret), 400, "CREDENTIALS_IN_MESSAGE");
    // An ACL without the other agent: access refuses it before anything else, then allows it again once granted.
    expect((await admin().send("aclSet", { intent_id: intent.id, body: { default_policy: "closed", entries: [{ principal_type: "agent", principal_id: allowed.id, permission: "write" }] } })).status).toBe(200);
    expectError(await post(channel.id, other, secret), 403, "INTENT_ACCESS_DENIED");
    expect((await post(channel.id, allowed, { payload: { ok: true } })).status).toBe(201);
    expect((await admin().send("aclGrant", { intent_id: intent.id, body: { principal_type: "agent", principal_id: other.id, permission: "write" } })).status).toBe(201);
    expectError(await post(channel.id, other, { payload: { ok: true } }), 403, "GOVERNANCE_VIOLATION");
    // The same through the by-name route and a reply: one check each, the same order.
    expectError(await harness.api("channelsSendByName", { ...other.as, params: { intent_id: intent.id, name: "ordered" }, body: secret }), 400, "CREDENTIALS_IN_MESSAGE");
    expectError(await harness.api("channelsSendByName", { ...other.as, params: { intent_id: intent.id, name: "ordered" }, body: { payload: {} } }), 403, "GOVERNANCE_VIOLATION");
  });

  it("task events other than ends, and the end of a task without an open channel, cost the channels service no transaction; an end with one closes it", async () => {
    const intent = await activeIntent();
    const task = async (title: string) => admin().ops.tasksCreate({ intent_id: intent.id, body: { title } });
    const moves = async (taskId: string) => {
      for (const move of ["tasksClaim", "tasksStart"] as const) expect((await admin().send(move, { task_id: taskId, body: {} })).status).toBe(200);
      expect((await admin().send("tasksComplete", { task_id: taskId, body: { output: {} } })).status).toBe(200);
    };
    const bare = await task("no channel");
    const work = await counted(["channels"], async () => {
      // The end is in the stream once it is seen on its subject; then the durable has taken it.
      const ended = harness.bus.nc.subscribe(harness.bus.subject(`im.evt.intent.${intent.id}.task.completed`), { max: 1 });
      await moves(bare.id);
      for await (const _ of ended) break;
      await consumed("channels-task-ends");
    });
    // task.claimed and task.started: nothing; task.completed: whether the task has an open channel.
    expect(shapes(work.channels)).toEqual([expect.stringMatching(/^select exists\(select 1 from channels\.channels where task_id/)]);
    const scoped = await task("with a channel");
    const channel = await admin().ops.channelsCreate({ intent_id: intent.id, body: { name: "scoped", task_id: scoped.id } });
    await moves(scoped.id);
    const status = async () => (await harness.database.db.select({ status: channelRows.status }).from(channelRows).where(eq(channelRows.id, channel.id)))[0]?.status;
    for (let i = 0; i < 100 && (await status()) !== "closed"; i++) await sleep(50);
    expect(await status()).toBe("closed");
  });
});

describe("acl.check_write (access and governance of one write, asked together)", () => {
  it("answers each check of a turn in one check_write_many request, in order: access refusals as errors, governance verdicts beside the access", async () => {
    const open = await activeIntent();
    const governed = await activeIntent();
    expect((await admin().send("governancePolicySet", { intent_id: governed.id, ifMatch: governed.version, body: { allowed_agents: ["alice"] } })).status).toBe(200);
    const closed = await activeIntent();
    expect((await admin().send("aclSet", { intent_id: closed.id, body: { default_policy: "closed", entries: [] } })).status).toBe(200);
    const as = (agent: string): Caller => ({ principal: `key:${agent}`, roles: ["agent"], actor: agent, agent_id: agent });
    const checks = new IntentWriteChecks(harness.client);
    const asked: string[] = [];
    const sub = harness.bus.nc.subscribe(harness.bus.subject("im.intents.acl.>"), { callback: (_err, msg) => void asked.push(msg.subject) });
    try {
      const outcomes = await Promise.allSettled([
        checks.check(as("bob"), open.id, "write", "channel"),
        checks.check(as("alice"), governed.id, "write", "channel"),
        checks.check(as("bob"), governed.id, "write", "channel"),
        checks.check(as("bob"), closed.id, "write", "channel"),
        checks.check(as("bob"), UNKNOWN_ID, "write", "channel"),
      ]);
      await harness.bus.nc.flush();
      expect(asked).toEqual([harness.bus.subject(writeCheckCommands.checkMany.subject)]);
      const [openOk, allowed, refused, denied, missing] = outcomes;
      for (const fine of [openOk, allowed]) {
        expect(fine.status).toBe("fulfilled");
        expect(() => (fine as PromiseFulfilledResult<WriteVerdict>).value.assertGovernance()).not.toThrow();
      }
      expect(refused.status).toBe("fulfilled");
      expect(() => (refused as PromiseFulfilledResult<WriteVerdict>).value.assertGovernance()).toThrow(expect.objectContaining({ code: "GOVERNANCE_VIOLATION", status: 403 }));
      expect(denied).toMatchObject({ status: "rejected", reason: { code: "INTENT_ACCESS_DENIED", status: 403 } });
      expect(missing).toMatchObject({ status: "rejected", reason: { code: "INTENT_NOT_FOUND", status: 404 } });
      // A lone check goes as acl.check_write, with the same verdict.
      asked.length = 0;
      await expect(checks.check(as("bob"), closed.id, "write", "channel")).rejects.toMatchObject({ code: "INTENT_ACCESS_DENIED" });
      const lone = await checks.check(as("bob"), governed.id, "write", "channel");
      expect(() => lone.assertGovernance()).toThrow(expect.objectContaining({ code: "GOVERNANCE_VIOLATION" }));
      await harness.bus.nc.flush();
      expect(asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject), harness.bus.subject(writeCheckCommands.check.subject)]);
    } finally {
      sub.unsubscribe();
    }
  });
});
