import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { rowsOf } from "@intentmesh/db";
import { streams, type Caller, type Intent, type SuspensionRecord } from "@intentmesh/contracts";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { openCountingDatabase, verbsOf, type CountingDatabase } from "../../../test/support/statement-count";
import { createIntent } from "../../../test/support/e2e-helpers";
import type { IntentsService } from "../src/service";
import type { IntentsContext } from "../src/kernel/context";
import { beginSuspension, endSuspension } from "../src/suspension/handlers";
import { PORTFOLIO_PROJECTION_DURABLE } from "../src/portfolios/projection";
import { READINESS_PROJECTION_DURABLE } from "../src/graph/projection";

/**
 * What the suspension primitives (im.intents.suspension.begin / .end) ask of PostgreSQL: the
 * statements of one begin and one end, counted through a database handle of their own, so a
 * statement added back to the path fails here. Without tasks to move, portfolios to check or an
 * ACL, each is BEGIN, the row lock, one statement for the change, the event log's one statement
 * (kernel/event-log.ts appendToLog) and COMMIT.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
let counting: CountingDatabase;
let ctx: IntentsContext;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ registry: QUIET.registry, intents: QUIET.intents }));
  counting = await openCountingDatabase(harness.databaseUrl);
  ctx = { ...harness.service.intents.ctx, db: counting.db, query: counting.query };
});
afterAll(async () => {
  await counting?.close();
  await harness?.stop();
});

/** As the governance service passes on an agent's key: no admin role, so the ACL is consulted (and has nothing to say without a policy). */
const agent: Caller = { principal: "agent-key", roles: ["agent"], actor: "agent-1", agent_id: null };
const REQUEST = { question: "Ship it?", response_type: "choice" as const, choices: [{ value: "yes", label: "Yes" }, { value: "no", label: "No" }], fallback_policy: "fail" as const, timeout_seconds: 3600 };

/** The event log's one statement after the lock that read its head: sequences, chain head, events and outbox rows (kernel/event-log.ts appendToLog). */
const EVENT_LOG = ["with"];

describe("suspension.begin and .end statements", () => {
  it("begin: BEGIN, the row lock, one change statement, the event log, COMMIT; nothing for portfolios, tasks or the ACL", async () => {
    const intent = await createIntent(harness);
    const { result, statements } = await counting.count(() => beginSuspension(ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent));
    expect(result).toMatchObject({ status: "suspended_awaiting_input", version: intent.version + 1 });
    expect(verbsOf(statements), statements.join("\n")).toEqual(["begin", "select", "with", ...EVENT_LOG, "commit"]);
  });

  it("end with an answer held to the record: the same, and no read before it", async () => {
    const intent = await createIntent(harness);
    const suspended = await beginSuspension(harness.service.intents.ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent);
    const record = suspended.state._suspension as SuspensionRecord;
    const { result, statements } = await counting.count(() =>
      endSuspension(ctx, { intent_id: intent.id, if_match: null, suspension_id: record.id, resolution: "responded", response: "yes", responded_by: "op", status: "active", validate_response: true }, agent),
    );
    expect(result).toMatchObject({ status: "active", state: { _suspension: { id: record.id, resolution: "responded", response: "yes" } } });
    expect(verbsOf(statements), statements.join("\n")).toEqual(["begin", "select", "with", ...EVENT_LOG, "commit"]);
  });

  it("an answer that does not fit the record is refused under the lock, after the status and id, and nothing is written", async () => {
    const intent = await createIntent(harness);
    const suspended = await beginSuspension(harness.service.intents.ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent);
    const record = suspended.state._suspension as SuspensionRecord;
    const end = (suspensionId: string, response: unknown) =>
      endSuspension(ctx, { intent_id: intent.id, if_match: null, suspension_id: suspensionId, resolution: "responded", response, responded_by: "op", status: "active", validate_response: true }, agent);
    await expect(end(record.id, "maybe")).rejects.toMatchObject({ code: "INVALID_RESPONSE_VALUE", details: { response_type: "choice" } });
    await expect(end(record.id, undefined)).rejects.toMatchObject({ code: "INVALID_RESPONSE_VALUE" });
    await expect(end("00000000-0000-0000-0000-000000000000", "maybe")).rejects.toMatchObject({ code: "SUSPENSION_MISMATCH" });
    const { statements } = await counting.count(() => end(record.id, "maybe").catch(() => undefined));
    expect(verbsOf(statements)).toEqual(["begin", "select", "rollback"]);
    const after = await harness.sdk().ops.intentsGet({ intent_id: intent.id });
    expect(after).toMatchObject({ status: "suspended_awaiting_input", version: (suspended as Intent).version });
  });

  it("with a task to block and release, and a portfolio to check: the task's own statements, the portfolio's none", async () => {
    const intent = await createIntent(harness);
    const admin = harness.sdk();
    const task = await admin.ops.tasksCreate({ intent_id: intent.id, body: { title: "work" } });
    await admin.ops.tasksClaim({ task_id: task.id, body: {} });
    const dueBefore = (ms: number) => new Date(harness.clock.now().getTime() + ms).toISOString();
    const portfolio = await admin.ops.portfoliosCreate({ body: { name: "launch", due_before: dueBefore(24 * 3600_000) } });
    await admin.ops.portfoliosAddMember({ portfolio_id: portfolio.id, body: { intent_id: intent.id } });
    const begun = await counting.count(() => beginSuspension(ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent));
    // The task blocked (one update) and its task.blocked logged (the event log's one statement).
    expect(verbsOf(begun.statements), begun.statements.join("\n")).toEqual(["begin", "select", "with", ...EVENT_LOG, "update", ...EVENT_LOG, "commit"]);
    expect((await admin.ops.tasksGet({ task_id: task.id })).status).toBe("blocked");
    const record = begun.result.state._suspension as SuspensionRecord;
    const ended = await counting.count(() =>
      endSuspension(ctx, { intent_id: intent.id, if_match: null, suspension_id: record.id, resolution: "responded", response: "no", status: "active", validate_response: true }, agent),
    );
    expect(verbsOf(ended.statements)[0]).toBe("begin");
    expect(verbsOf(ended.statements).at(-1)).toBe("commit");
    expect((await admin.ops.tasksGet({ task_id: task.id })).status).toBe("claimed");
  });

  it("an intent with an ACL: the caller's write permission is read on the transaction's connection, before the If-Match", async () => {
    const intent = await createIntent(harness);
    const admin = harness.sdk();
    await admin.send("aclSet", { intent_id: intent.id, body: { default_policy: "closed", entries: [{ principal_id: "someone-else", principal_type: "user", permission: "admin" }] } });
    const stale = 999;
    const refused = await counting.count(() => beginSuspension(ctx, { intent_id: intent.id, if_match: stale, suspension: REQUEST }, agent).catch((error: unknown) => error));
    expect(refused.result).toMatchObject({ code: "INTENT_ACCESS_DENIED" });
    expect(verbsOf(refused.statements)).toEqual(["begin", "select", "select", "rollback"]);
    // An admin passes every ACL: only the If-Match refuses it.
    const harnessAdmin: Caller = { principal: "harness", roles: ["admin"], actor: "harness", agent_id: null };
    await expect(beginSuspension(ctx, { intent_id: intent.id, if_match: stale, suspension: REQUEST }, harnessAdmin)).rejects.toMatchObject({ code: "VERSION_MISMATCH" });
  });

  it("the portfolio's due_before is still checked from the change's statement: a deadline past it is refused and nothing is written", async () => {
    const intent = await createIntent(harness);
    const admin = harness.sdk();
    const portfolio = await admin.ops.portfoliosCreate({ body: { name: "soon", due_before: new Date(harness.clock.now().getTime() + 1800_000).toISOString() } });
    await admin.ops.portfoliosAddMember({ portfolio_id: portfolio.id, body: { intent_id: intent.id } });
    await expect(beginSuspension(ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent)).rejects.toMatchObject({
      code: "SUSPENSION_PAST_DUE_BEFORE",
    });
    expect(await admin.ops.intentsGet({ intent_id: intent.id })).toMatchObject({ status: "active", version: intent.version });
  });

  it("the intents' own projections of status_changed open no transaction for an intent in no portfolio that did not complete", async () => {
    const consumers = [PORTFOLIO_PROJECTION_DURABLE, READINESS_PROJECTION_DURABLE];
    const inboxRows = async () =>
      rowsOf<{ n: number }>(await harness.database.db.execute(sql`select count(*)::int as n from intents.inbox where consumer in (${sql.join(consumers.map((c) => sql`${c}`), sql`, `)})`))[0]!.n;
    const drained = async () => {
      await vi.waitFor(async () => expect(rowsOf<{ n: number }>(await harness.database.db.execute(sql`select count(*)::int as n from intents.outbox where published_at is null`))[0]!.n).toBe(0));
      await vi.waitFor(async () => {
        for (const durable of consumers) {
          const info = await harness.bus.jsm.consumers.info(harness.bus.streamName(streams.intents.name), durable);
          expect(info.num_pending + info.num_ack_pending).toBe(0);
        }
      });
    };
    await drained();
    const before = await inboxRows();
    const intent = await createIntent(harness);
    const suspended = await beginSuspension(harness.service.intents.ctx, { intent_id: intent.id, if_match: null, suspension: REQUEST }, agent);
    const record = suspended.state._suspension as SuspensionRecord;
    await endSuspension(harness.service.intents.ctx, { intent_id: intent.id, if_match: null, suspension_id: record.id, resolution: "responded", response: "yes", status: "active", validate_response: true }, agent);
    await drained();
    expect(await inboxRows()).toBe(before);
  });
});

