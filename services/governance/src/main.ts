import { baseConfigSchema, openDatabase, parseConfig } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import { HumanRetryPolicy } from "@intentmesh/contracts";
import { createLogger, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
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

// Entry point of the governance service alone (one Kubernetes deployment): config -> logger ->
// db -> bus -> handlers -> shutdown.
await runMain("governance", async () => {
  const config = parseConfig(
    "governance",
    baseConfigSchema.extend({
      SUSPENSION_TIMER_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
      SUSPENSION_DEFAULT_RETRY_POLICY: retryPolicyJson,
    }),
  );
  startTracing("governance");
  const logger = createLogger("governance", config.LOG_LEVEL);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  const bus = await connectBus(config.NATS_URL, "governance", config.BUS_NAMESPACE);
  const service = await startGovernanceService({
    bus,
    database,
    logger,
    timerIntervalMs: config.SUSPENSION_TIMER_INTERVAL_MS,
    defaultRetryPolicy: config.SUSPENSION_DEFAULT_RETRY_POLICY,
  });
  stopOnSignals(logger, [() => service.stop(), () => bus.close(), () => database.close(), stopTracing]);
});
