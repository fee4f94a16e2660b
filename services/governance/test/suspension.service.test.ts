import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sql } from "drizzle-orm";
import { streams, type Caller, type SuspensionRecord } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { createIntent, expectRejected } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { countingClient, openCountingDatabase, verbsOf, type CountingDatabase } from "../../../test/support/statement-count";
import type { IntentsService } from "../../intents/src/service";
import type { GovernanceService } from "../src/service";
import { respond, suspend } from "../src/handlers/suspension";
import { CANCEL_TRACKER_DURABLE, TRACKER_DURABLE } from "../src/tracker";
import { SettledSuspensions } from "../src/tracking";

/**
 * What a suspend/respond cycle costs the governance service: each request asks the intents
 * service once (suspension.begin, suspension.end: they check the caller's permission, the
 * suspension and the answer under the intent's row lock) and writes its tracking row in one
 * statement; and the tracker, seeing the intent's events of a cycle this process recorded
 * itself, applies nothing and opens no transaction. Counted (requests, statements, inbox rows),
 * never timed. The intents service runs beside it, and the registry for the gateway.
 */
let harness: ServiceHarness<{ intents: IntentsService; governance: GovernanceService; stop(): Promise<void> }>;
let counting: CountingDatabase;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ registry: QUIET.registry, intents: QUIET.intents, governance: QUIET.governance }));
  counting = await openCountingDatabase(harness.databaseUrl);
});
afterAll(async () => {
  await counting?.close();
  await harness?.stop();
});

const operator: Caller = { principal: "operator-key", roles: ["operator"], actor: "operator-1", agent_id: null };
const REQUEST = { question: "Ship it?", response_type: "choice" as const, choices: [{ value: "yes", label: "Yes", description: "now" }, { value: "no", label: "No" }], fallback_policy: "fail" as const, timeout_seconds: 3600 };

/**
 * The governance context with its database and bus client counted, and a memory of settled
 * suspensions of its own: the service's tracker, racing the handler, cannot spare it its write.
 */
function countedContext() {
  const bus = countingClient(harness.service.governance.ctx.client);
  return { ctx: { ...harness.service.governance.ctx, db: counting.db, client: bus.client, settled: new SettledSuspensions() }, requests: bus.subjects };
}

const rowCount = async (query: ReturnType<typeof sql>) => rowsOf<{ n: number }>(await harness.database.db.execute(query))[0]!.n;

/** The tracker has taken (applied, or acknowledged as nothing to apply) every intent event published so far. */
async function trackerCaughtUp() {
  await vi.waitFor(async () => expect(await rowCount(sql`select count(*)::int as n from intents.outbox where published_at is null`)).toBe(0));
  await vi.waitFor(async () => {
    for (const durable of [TRACKER_DURABLE, CANCEL_TRACKER_DURABLE]) {
      const info = await harness.bus.jsm.consumers.info(harness.bus.streamName(streams.intents.name), durable);
      expect(info.num_pending + info.num_ack_pending).toBe(0);
    }
  });
}

describe("a suspend/respond cycle's work in the governance service", () => {
  it("suspend: one request (suspension.begin) and one statement; respond: one request (suspension.end) and one statement, no read first", async () => {
    const intent = await createIntent(harness);
    const { ctx, requests } = countedContext();
    const suspended = await counting.count(() => suspend(ctx, { intent_id: intent.id, if_match: null, body: REQUEST }, operator));
    expect(requests).toEqual(["im.intents.suspension.begin"]);
    expect(verbsOf(suspended.statements)).toEqual(["insert"]);
    const id = (suspended.result.state._suspension as SuspensionRecord).id;

    requests.length = 0;
    let asked = 0;
    const answered = await counting.count(() =>
      respond(ctx, { intent_id: intent.id, body: { suspension_id: id.toUpperCase(), value: "yes" } }, operator, async () => {
        asked++;
      }),
    );
    expect(answered.result).toMatchObject({ intent_id: intent.id, suspension_id: id, resolution: "responded", value: "yes", choice_label: "Yes", choice_description: "now", responded_by: "operator-1" });
    expect(requests).toEqual(["im.intents.suspension.end"]);
    expect(verbsOf(answered.statements)).toEqual(["update"]);
    // The permission is the intents service's to check; this side asks only where it refuses alone.
    expect(asked).toBe(0);
    const [row] = rowsOf<{ status: string; next_due_at: Date | null }>(await harness.database.db.execute(sql`select status, next_due_at from governance.suspensions where suspension_id = ${id}`));
    expect(row).toEqual({ status: "responded", next_due_at: null });
  });

  it("the tracker applies a cycle's events with no transaction and no inbox row (each effect one statement, idempotent alone), a cancellation too", async () => {
    await trackerCaughtUp();
    const inboxRows = () => rowCount(sql`select count(*)::int as n from governance.inbox`);
    const before = await inboxRows();
    const intent = await createIntent(harness);
    const suspended = await harness.sdk().ops.governanceSuspend({ intent_id: intent.id, body: REQUEST });
    const id = (suspended.state._suspension as SuspensionRecord).id;
    await harness.sdk("operator").ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: id, value: "no" } });
    await trackerCaughtUp();
    expect(await inboxRows()).toBe(before);

    // A cancellation (the intent abandoned while suspended) is the intents service's alone: only the tracker records it.
    const other = await createIntent(harness);
    const waiting = await harness.sdk().ops.governanceSuspend({ intent_id: other.id, body: REQUEST });
    const waitingId = (waiting.state._suspension as SuspensionRecord).id;
    await harness.sdk().ops.intentsTransition({ intent_id: other.id, ifMatch: waiting.version, body: { status: "abandoned", reason: "not needed" } });
    await trackerCaughtUp();
    expect(await inboxRows()).toBe(before);
    const [row] = rowsOf<{ status: string }>(await harness.database.db.execute(sql`select status from governance.suspensions where suspension_id = ${waitingId}`));
    expect(row!.status).toBe("cancelled");
  });

  it("refusals keep their order: the caller's permission first, then a missing id, the suspension, the value", async () => {
    const intent = await createIntent(harness);
    const suspended = await harness.sdk().ops.governanceSuspend({ intent_id: intent.id, body: REQUEST });
    const id = (suspended.state._suspension as SuspensionRecord).id;
    const answer = (body: { suspension_id: string; value?: unknown }, key: "operator" | "admin" = "operator") => harness.sdk(key).send("governanceRespond", { intent_id: intent.id, body });
    await expectRejected(answer({ suspension_id: " ", value: "yes" }), 422, "SUSPENSION_ID_REQUIRED");
    await expectRejected(answer({ suspension_id: "not-a-uuid", value: "yes" }), 409, "SUSPENSION_MISMATCH");
    await expectRejected(answer({ suspension_id: id, value: "maybe" }), 422, "INVALID_RESPONSE_VALUE");
    await expectRejected(answer({ suspension_id: id }), 422, "INVALID_RESPONSE_VALUE");
    // Closed to everyone but one other principal: the operator is refused whatever its body, an admin is not.
    await harness.sdk().send("aclSet", { intent_id: intent.id, body: { default_policy: "closed", entries: [{ principal_id: "someone-else", principal_type: "user", permission: "admin" }] } });
    await expectRejected(answer({ suspension_id: "" }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(answer({ suspension_id: "not-a-uuid", value: "yes" }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(answer({ suspension_id: id, value: "maybe" }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(harness.sdk("operator").send("governanceSuspend", { intent_id: intent.id, body: REQUEST }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(answer({ suspension_id: "" }, "admin"), 422, "SUSPENSION_ID_REQUIRED");
    expect((await answer({ suspension_id: id, value: "yes" }, "admin")).status).toBe(200);
    await expectRejected(answer({ suspension_id: id, value: "yes" }, "admin"), 409, "NOT_SUSPENDED");
  });
});
