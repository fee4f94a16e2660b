import { randomUUID } from "node:crypto";
import { and, asc, count, eq, inArray, type SQL } from "drizzle-orm";
import {
  AppError,
  appError,
  intentsCommands,
  isoTimestamp,
  type ArbitrateBody,
  type Caller,
  type EscalateBody,
  type Escalation,
  type ResolveEscalationBody,
  type z,
  type ArbitrationRequest,
  type ArbitrationHistory,
  type ListEscalationsQuery,
} from "@intentmesh/contracts";
import type { GovernanceContext } from "../context";
import { approvals } from "../db/schema";
import { announceApproval, decideApproval, type ApprovalRow } from "./approvals";

/**
 * Escalations to a human and arbitration requests (RFC-0013, RFC-0004; docs/coordinators.md):
 * approval requests (spec 4.6) with the action `escalation` or `arbitration`, so a human waits on
 * them the one way the platform has. Resolving an escalation is granting its approval (exactly
 * once, not by its escalator: decideApproval), with the resolution; denying it through the
 * approvals route dismisses it.
 */

export const ESCALATION_ACTION = "escalation";
export const ARBITRATION_ACTION = "arbitration";

const STATUS_OF = { pending: "pending", approved: "resolved", denied: "dismissed" } as const;
const APPROVAL_STATUS_OF = { pending: "pending", resolved: "approved", dismissed: "denied" } as const;

export function toEscalation(row: ApprovalRow): Escalation {
  return {
    id: row.id,
    intent_id: row.intentId,
    escalated_by: row.requestedBy,
    reason: row.reason ?? "",
    priority: (row.priority ?? "medium") as Escalation["priority"],
    urgency: (row.urgency ?? "medium") as Escalation["urgency"],
    context: row.context,
    status: STATUS_OF[row.status],
    created_at: isoTimestamp(row.createdAt),
    resolved_at: row.decidedAt ? isoTimestamp(row.decidedAt) : null,
    resolved_by: row.decidedBy,
    resolution: row.resolution,
    resolution_notes: row.decisionNotes,
    approval_id: row.id,
  };
}

function assertActor(named: string | undefined, caller: Caller, field: string): void {
  if (named !== undefined && named !== caller.actor) {
    throw appError("AGENT_MISMATCH", `${field} ${named} is not the acting agent ${caller.actor}`, { [field]: named, actor: caller.actor });
  }
}

async function insertRequest(ctx: GovernanceContext, intentId: string, caller: Caller, values: Pick<ApprovalRow, "action" | "reason" | "context" | "requestedBy" | "priority" | "urgency">): Promise<ApprovalRow> {
  // The intent must exist (404 otherwise); the caller's access was checked by the route's rule.
  await ctx.client.request(intentsCommands.get, ctx.systemCaller, { intent_id: intentId });
  const [row] = await ctx.db
    .insert(approvals)
    .values({ id: randomUUID(), intentId, requesterPrincipal: caller.principal, status: "pending", createdAt: ctx.clock.now(), resolution: null, ...values })
    .returning();
  announceApproval(ctx, intentId);
  return row!;
}

/** POST /intents/{id}/escalations (escalate_to_human). */
export async function escalate(ctx: GovernanceContext, intentId: string, body: EscalateBody, caller: Caller): Promise<Escalation> {
  assertActor(body.escalated_by, caller, "escalated_by");
  const row = await insertRequest(ctx, intentId, caller, {
    action: ESCALATION_ACTION,
    reason: body.reason,
    context: body.context ?? {},
    requestedBy: caller.actor,
    priority: body.priority,
    urgency: body.urgency,
  });
  return toEscalation(row);
}

const toArbitrationRequest = (row: ApprovalRow): z.output<typeof ArbitrationRequest> => ({
  id: row.id,
  intent_id: row.intentId,
  requester_id: row.requestedBy,
  reason: row.reason ?? "",
  context: row.context,
  status: row.status,
  created_at: isoTimestamp(row.createdAt),
  approval_id: row.id,
});

/** POST /intents/{id}/arbitrate (request_arbitration). */
export async function requestArbitration(ctx: GovernanceContext, intentId: string, body: ArbitrateBody, caller: Caller): Promise<z.output<typeof ArbitrationRequest>> {
  assertActor(body.requested_by, caller, "requested_by");
  const row = await insertRequest(ctx, intentId, caller, { action: ARBITRATION_ACTION, reason: body.reason, context: body.context ?? {}, requestedBy: caller.actor, priority: null, urgency: null });
  return toArbitrationRequest(row);
}

/** GET /intents/{id}/arbitration (the MCP server's get_arbitration): the intent's arbitration requests, oldest first. */
export async function arbitrationHistory(ctx: GovernanceContext, intentId: string, limit: number): Promise<z.output<typeof ArbitrationHistory>> {
  await ctx.client.request(intentsCommands.get, ctx.systemCaller, { intent_id: intentId });
  const rows = await ctx.db
    .select()
    .from(approvals)
    .where(and(eq(approvals.intentId, intentId), eq(approvals.action, ARBITRATION_ACTION)))
    .orderBy(asc(approvals.createdAt), asc(approvals.id))
    .limit(limit + 1);
  const shown = rows.slice(0, limit);
  const [{ pending } = { pending: 0 }] = await ctx.db
    .select({ pending: count() })
    .from(approvals)
    .where(and(eq(approvals.intentId, intentId), eq(approvals.action, ARBITRATION_ACTION), eq(approvals.status, "pending")));
  return { intent_id: intentId, requests: shown.map(toArbitrationRequest), pending, has_more: rows.length > limit };
}

/**
 * GET /escalations: oldest first. With intent_id the route's rule checked read on it; without,
 * each escalation's intent is checked (read) and those the caller may not read are left out.
 */
export async function listEscalations(
  ctx: GovernanceContext,
  query: z.output<typeof ListEscalationsQuery>,
  caller: Caller,
  mayRead: (intentId: string) => Promise<void>,
): Promise<{ escalations: Escalation[]; has_more: boolean }> {
  const filters: SQL[] = [eq(approvals.action, ESCALATION_ACTION)];
  if (query.intent_id) filters.push(eq(approvals.intentId, query.intent_id));
  if (query.status) filters.push(eq(approvals.status, APPROVAL_STATUS_OF[query.status]));
  const rows = await ctx.db.select().from(approvals).where(and(...filters)).orderBy(asc(approvals.createdAt), asc(approvals.id)).limit(query.limit + 1);
  let shown = rows;
  if (!query.intent_id) {
    const readable = new Set<string>();
    await Promise.all(
      [...new Set(rows.map((r) => r.intentId))].map((intentId) =>
        mayRead(intentId).then(
          () => readable.add(intentId),
          (error: unknown) => {
            if (!(error instanceof AppError) || (error.status !== 403 && error.status !== 404)) throw error;
          },
        ),
      ),
    );
    shown = rows.filter((r) => readable.has(r.intentId));
  }
  return { escalations: shown.slice(0, query.limit).map(toEscalation), has_more: rows.length > query.limit };
}

async function findEscalation(ctx: GovernanceContext, escalationId: string): Promise<ApprovalRow> {
  const [row] = await ctx.db.select().from(approvals).where(and(eq(approvals.id, escalationId), eq(approvals.action, ESCALATION_ACTION)));
  if (!row) throw appError("ESCALATION_NOT_FOUND", `escalation ${escalationId} was not found`, { resource: "escalation", id: escalationId });
  return row;
}

/** POST /escalations/{id}/resolve: the escalation's approval granted, with the resolution and notes. */
export async function resolveEscalation(ctx: GovernanceContext, escalationId: string, body: ResolveEscalationBody, caller: Caller): Promise<Escalation> {
  const row = await findEscalation(ctx, escalationId);
  const decided = await decideApproval(ctx, { intent_id: row.intentId, approval_id: row.id, body: { notes: body.notes ?? null } }, "approved", caller, body.resolution);
  return toEscalation(decided);
}

/** The intents an escalation command touches, for its access rule (IntentAccessChecks resources). */
export async function escalationIntents(ctx: GovernanceContext, command: string | number | symbol, input: { query?: { intent_id?: string }; escalation_id?: string }): Promise<string[]> {
  if (command === "list") return input.query?.intent_id ? [input.query.intent_id] : [];
  if (command === "resolve" && input.escalation_id) {
    const rows = await ctx.db.select({ intentId: approvals.intentId }).from(approvals).where(and(eq(approvals.id, input.escalation_id), inArray(approvals.action, [ESCALATION_ACTION])));
    return rows.map((r) => r.intentId);
  }
  return [];
}
