import { randomUUID } from "node:crypto";
import { and, asc, eq, type SQL } from "drizzle-orm";
import { APPROVAL_REQUESTED, appError, type APPROVAL_STATUSES, type InboxHint, inboxNoticeSubject, type Caller, type CreateApprovalBody, type DecideApprovalBody, errors, governanceEvents, intentsCommands, isoTimestamp } from "@intentmesh/contracts";
import { enqueueSystemEvents } from "@intentmesh/bus";
import type { GovernanceContext } from "../context";
import { approvals, outbox } from "../db/schema";
import { governanceEvent } from "../system-events";

export type ApprovalRow = typeof approvals.$inferSelect;

export interface Approval {
  id: string;
  intent_id: string;
  action: string;
  reason: string | null;
  context: Record<string, unknown>;
  requested_by: string;
  status: (typeof APPROVAL_STATUSES)[number];
  created_at: string;
  decided_at: string | null;
  decided_by: string | null;
  decision_notes: string | null;
}

export function toApproval(row: ApprovalRow): Approval {
  return {
    id: row.id,
    intent_id: row.intentId,
    action: row.action,
    reason: row.reason,
    context: row.context,
    requested_by: row.requestedBy,
    status: row.status,
    created_at: isoTimestamp(row.createdAt),
    decided_at: row.decidedAt ? isoTimestamp(row.decidedAt) : null,
    decided_by: row.decidedBy,
    decision_notes: row.decisionNotes,
  };
}

/**
 * POST /intents/{id}/approvals: a pending approval request. `requested_by` defaults to the acting
 * agent; the requesting key's principal is kept too, so neither may decide it. No event: the
 * official clients' server writes none, and the decision is what the log records.
 */
export async function createApproval(ctx: GovernanceContext, intentId: string, body: CreateApprovalBody, caller: Caller): Promise<Approval> {
  await ctx.client.request(intentsCommands.get, caller, { intent_id: intentId });
  const [row] = await ctx.db
    .insert(approvals)
    .values({
      id: randomUUID(),
      intentId,
      action: body.action,
      reason: body.reason ?? null,
      context: body.context ?? {},
      requestedBy: body.requested_by ?? caller.actor,
      requesterPrincipal: caller.principal,
      status: "pending",
      createdAt: ctx.clock.now(),
    })
    .returning();
  announceApproval(ctx, intentId);
  return toApproval(row!);
}

/** After a new approval's row committed: operators' inboxes read the intent again (libs/contracts inbox.ts). */
export function announceApproval(ctx: GovernanceContext, intentId: string): void {
  ctx.client.hint(inboxNoticeSubject(intentId), { intent_id: intentId, cause: APPROVAL_REQUESTED } satisfies InboxHint);
}

export async function findApproval(ctx: GovernanceContext, intentId: string, approvalId: string): Promise<ApprovalRow> {
  const [row] = await ctx.db.select().from(approvals).where(and(eq(approvals.id, approvalId), eq(approvals.intentId, intentId)));
  if (!row) throw errors.notFound("approval", approvalId);
  return row;
}

export async function getApproval(ctx: GovernanceContext, intentId: string, approvalId: string): Promise<Approval> {
  return toApproval(await findApproval(ctx, intentId, approvalId));
}

export async function listApprovals(ctx: GovernanceContext, intentId: string, query: { status?: Approval["status"]; limit: number }): Promise<{ approvals: Approval[] }> {
  const filters: SQL[] = [eq(approvals.intentId, intentId)];
  if (query.status) filters.push(eq(approvals.status, query.status));
  const rows = await ctx.db.select().from(approvals).where(and(...filters)).orderBy(asc(approvals.createdAt), asc(approvals.id)).limit(query.limit);
  if (!rows.length) await ctx.client.request(intentsCommands.get, ctx.systemCaller, { intent_id: intentId });
  return { approvals: rows.map(toApproval) };
}

/**
 * approve / deny: exactly one decision. The update is conditional on `pending`, so of concurrent
 * decisions one changes the row and the others find it decided (409 APPROVAL_NOT_PENDING). The
 * decider is the key's principal (a body's approved_by / denied_by is ignored); the requester,
 * by principal or by requested_by, may not decide its own request. The event enters the intent's
 * log through the outbox of the same transaction.
 */
export async function decideApproval(
  ctx: GovernanceContext,
  input: { intent_id: string; approval_id: string; body: DecideApprovalBody },
  decision: "approved" | "denied",
  caller: Caller,
  /** An escalation's resolution (escalations.ts), written with the decision. */
  resolution?: string,
): Promise<ApprovalRow> {
  const current = await findApproval(ctx, input.intent_id, input.approval_id);
  if (current.requesterPrincipal === caller.principal || current.requestedBy === caller.actor) {
    throw appError("SELF_APPROVAL", "an approval is decided by someone other than its requester", { requested_by: current.requestedBy });
  }
  const now = ctx.clock.now();
  const notes = input.body.reason ?? input.body.notes ?? null;
  const decided = await ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .update(approvals)
      .set({ status: decision, decidedBy: caller.principal, decidedAt: now, decisionNotes: notes, ...(resolution === undefined ? {} : { resolution }) })
      .where(and(eq(approvals.id, input.approval_id), eq(approvals.status, "pending")))
      .returning();
    if (!row) return null;
    const definition = decision === "approved" ? governanceEvents.approvalGranted : governanceEvents.approvalDenied;
    await enqueueSystemEvents(tx, outbox, [
      governanceEvent(
        definition,
        randomUUID(),
        row.intentId,
        caller.actor,
        { approval_id: row.id, action: row.action, decision, requested_by: row.requestedBy, decided_by: caller.principal, reason: notes },
        now,
      ),
    ]);
    return row;
  });
  if (!decided) {
    const again = await findApproval(ctx, input.intent_id, input.approval_id);
    throw appError("APPROVAL_NOT_PENDING", `approval ${again.id} is already ${again.status}`, { status: again.status, decided_by: again.decidedBy });
  }
  ctx.published();
  return decided;
}

/** For the intents service's completion_mode check: how many approvals of `action` were granted on the intent. */
export async function grantedApprovals(ctx: GovernanceContext, intentId: string, action: string): Promise<{ granted: number }> {
  const rows = await ctx.db
    .select({ id: approvals.id })
    .from(approvals)
    .where(and(eq(approvals.intentId, intentId), eq(approvals.action, action), eq(approvals.status, "approved")));
  return { granted: rows.length };
}
