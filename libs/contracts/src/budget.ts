import { z } from "./zod";

/**
 * The budget at constraints.budget (spec 2.6), apart from costs.ts so that the intent contracts
 * can check it without importing the subject catalogue (which imports them).
 */
/** Budget limits at constraints.budget (spec 2.6). Every field is optional; an absent limit does not apply. */
const centsLimit = (description: string) =>
  z.number().int("must be a whole number of cents").min(0, "must not be negative").max(Number.MAX_SAFE_INTEGER).optional().openapi({ description });

export const Budget = z
  .object({
    max_total_cents: centsLimit("the intent's spend, in cents, above which work stops"),
    max_per_agent_cents: centsLimit("one agent's spend on the intent, in cents, above which work stops"),
    max_per_call_cents: centsLimit("one cost record above this many cents stops work"),
    alert_threshold_percent: z
      .number()
      .int("must be a whole percentage")
      .min(1, "must be between 1 and 100")
      .max(100, "must be between 1 and 100")
      .optional()
      .openapi({ description: "budget_alert when spend reaches this share of max_total_cents (or of max_per_agent_cents for one agent); none when absent" }),
  })
  .strict()
  .openapi("Budget");
export type Budget = z.infer<typeof Budget>;

/** constraints of an intent: any JSON object; its `budget`, when present, must be a valid Budget. */
export const IntentConstraints = z.looseObject({ budget: Budget.optional() }).openapi({ description: "a JSON object; `budget` (see Budget) is checked" });

