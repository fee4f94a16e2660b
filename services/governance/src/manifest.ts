import { HumanRetryPolicy } from "@intentmesh/contracts";
import { defineService } from "@intentmesh/service";
import { documented } from "@intentmesh/telemetry";
import { z } from "zod";
import { startGovernanceService } from "./service";

/** SUSPENSION_DEFAULT_RETRY_POLICY: a HumanRetryPolicy as JSON, the platform default of the retry cascade. */
const retryPolicyJson = z
  .string()
  .optional()
  .transform((text, ctx) => {
    if (!text) return null;
    try {
      return HumanRetryPolicy.parse(JSON.parse(text));
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a HumanRetryPolicy as JSON: {max_attempts, interval_seconds, strategy?, escalation_ladder?, final_fallback_policy?}" });
      return z.NEVER;
    }
  });

/** The governance service: suspensions' surface and timers, approvals, engagement decisions (docs/governance.md). */
export const governanceService = defineService({
  name: "governance",
  env: z.object({
    SUSPENSION_TIMER_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(1000), "how often due suspensions are re-notified or timed out"),
    SUSPENSION_DEFAULT_RETRY_POLICY: documented(retryPolicyJson, "the platform default HumanRetryPolicy (JSON), cascade level 3 (docs/governance.md)", "none"),
  }),
  options: (config) => ({ timerIntervalMs: config.SUSPENSION_TIMER_INTERVAL_MS, defaultRetryPolicy: config.SUSPENSION_DEFAULT_RETRY_POLICY }),
  start: startGovernanceService,
});
