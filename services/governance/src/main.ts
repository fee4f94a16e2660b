import { HumanRetryPolicy } from "@intentmesh/contracts";
import { runService } from "@intentmesh/service";
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

// Entry point of the governance service alone (one Kubernetes deployment).
await runService(
  "governance",
  z.object({
    SUSPENSION_TIMER_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
    SUSPENSION_DEFAULT_RETRY_POLICY: retryPolicyJson,
  }),
  ({ config, ...connections }) =>
    startGovernanceService({ ...connections, timerIntervalMs: config.SUSPENSION_TIMER_INTERVAL_MS, defaultRetryPolicy: config.SUSPENSION_DEFAULT_RETRY_POLICY }),
);
