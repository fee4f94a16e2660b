import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { startIntentsService } from "./service";

/** The intents service: intents, state, events, leases, tasks, portfolios, costs, governance policy. */
export const intentsService = defineService({
  name: "intents",
  env: z.object({
    LEASE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
    // RFC 0019 3.1 scheduled checkpoints (docs/verifiable-logs.md).
    CHECKPOINT_BATCH_EVENTS: z.coerce.number().int().min(1).max(10_000).default(100),
    CHECKPOINT_MAX_AGE_MS: z.coerce.number().int().min(1000).default(300_000),
    CHECKPOINT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(30_000),
  }),
  options: (config) => ({
    leaseSweepIntervalMs: config.LEASE_SWEEP_INTERVAL_MS,
    checkpoints: { batchEvents: config.CHECKPOINT_BATCH_EVENTS, maxAgeMs: config.CHECKPOINT_MAX_AGE_MS, intervalMs: config.CHECKPOINT_SWEEP_INTERVAL_MS },
  }),
  start: startIntentsService,
});
