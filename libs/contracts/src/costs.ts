import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit, seqCursor } from "./common";
import { command, IfMatch, IntentRef } from "./command";
import { Budget } from "./budget";
import { Intent } from "./intents";

/**
 * Cost records and budgets (spec 2.6, 4.2). Every cost is recorded, whatever the budget says: it
 * has already been spent. Only cents count toward a budget: an amount in unit `cents` counts as
 * itself; an amount in another unit counts only when the record states its value in `cents`.
 */

export const COST_TYPES = ["tokens", "api_call", "compute", "custom"] as const;
export const CostType = z.enum(COST_TYPES);
export type CostType = z.infer<typeof CostType>;

export const COST_UNITS = ["tokens", "cents", "seconds", "custom"] as const;
export const CostUnit = z.enum(COST_UNITS);
export type CostUnit = z.infer<typeof CostUnit>;

/** The largest amount (and cents value) one record may carry: beyond any real cost, and keeps sums exact and printable. */
export const MAX_COST_AMOUNT = 1e15;

const nonNegativeAmount = (what: string) =>
  z
    .number(`${what} must be a finite number`)
    .min(0, `${what} must not be negative`)
    .max(MAX_COST_AMOUNT, `${what} must be at most ${MAX_COST_AMOUNT}`);

export const CostRecord = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    agent_id: z.string(),
    cost_type: CostType,
    amount: z.number(),
    unit: CostUnit,
    provider: z.string().nullable(),
    metadata: JsonObject,
    cents: z
      .number()
      .nullable()
      .openapi({ description: "what the record counts toward the budget: the amount when unit is cents, else the cents the record stated, else null (counts nothing)" }),
    recorded_at: Timestamp,
  })
  .openapi("CostRecord");
export type CostRecord = z.infer<typeof CostRecord>;

export const RecordCostBody = z
  .object({
    agent_id: ActorId.optional().openapi({ description: "the agent that incurred the cost; default the acting agent (X-Agent-ID or the key's principal)" }),
    cost_type: CostType,
    amount: nonNegativeAmount("amount"),
    unit: CostUnit,
    provider: z.string().max(200).nullable().optional(),
    metadata: boundedJsonObject(16 * 1024).default({}),
    cents: nonNegativeAmount("cents")
      .optional()
      .openapi({ description: "the record's value in cents, for amounts in other units; counts toward the budget. With unit cents it must equal amount." }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.unit === "cents" && body.cents !== undefined && body.cents !== body.amount) {
      ctx.addIssue({ code: "custom", path: ["cents"], message: `with unit cents the amount is the cents value; cents (${body.cents}) differs from amount (${body.amount})` });
    }
  })
  .openapi("RecordCost");
export type RecordCostBody = z.output<typeof RecordCostBody>;

/** What a cost record counts toward the budget (null: nothing). */
export const centsOf = (record: { unit: string; amount: number; cents?: number | null | undefined }): number | null =>
  record.unit === "cents" ? record.amount : (record.cents ?? null);

export const CostSummary = z
  .object({
    total: z.number().openapi({ description: "sum of every record's amount, whatever its unit (as spec 4.2 says)" }),
    by_type: z.record(z.string(), z.number()).openapi({ description: "cost_type -> sum of amounts" }),
    by_agent: z.record(z.string(), z.number()).openapi({ description: "agent_id -> sum of amounts" }),
    count: z.number().int(),
    total_cents: z.number().openapi({ description: "what counts toward the budget: sum of the records' cents" }),
    by_agent_cents: z.record(z.string(), z.number()),
  })
  .openapi("CostSummary");

export const CostPage = z
  .object({
    costs: z.array(CostRecord),
    summary: CostSummary,
    budget: z.object({
      limits: Budget.nullable(),
      blocked: z.boolean().openapi({ description: "the intent is blocked because its budget was exceeded" }),
    }),
    next_cursor: z.string(),
    has_more: z.boolean(),
  })
  .openapi("CostPage");

export const ListCostsQuery = z.object({
  after: seqCursor("records recorded"),
  limit: pageLimit(100, 1000),
});
export type ListCostsQuery = z.infer<typeof ListCostsQuery>;

export const costsCommands = {
  record: command("intents", "costs.record", IntentRef.extend({ body: RecordCostBody }), CostRecord, ["AGENT_MISMATCH", "COST_AGENTS_FULL", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND"]),
  list: command("intents", "costs.list", IntentRef.extend({ query: ListCostsQuery }), CostPage, ["INTENT_NOT_FOUND"]),
  setBudget: command("intents", "budget.set", IntentRef.merge(IfMatch).extend({ body: Budget }), Intent, ["INTENT_NOT_FOUND", "PRECONDITION_REQUIRED", "VERSION_MISMATCH"]),
} as const;

/** The reason stored on, and announced for, an intent blocked by its budget. */
export const BUDGET_EXCEEDED_REASON = "budget_exceeded";

/**
 * The most distinct agents one intent may have costs from. GET /intents/{id}/costs returns a
 * summary with every agent (by_agent, by_agent_cents) beside a page of records, and the whole
 * reply must fit in one bus message: 250 agents with the longest ids take about 310 KiB, next to
 * a page of at most 512 KiB. A cost from a 251st agent is refused (409 COST_AGENTS_FULL).
 */
export const MAX_COST_AGENTS_PER_INTENT = 250;
