import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { documented } from "@intentmesh/telemetry";
import { startIntentsService } from "./service";

/** The intents service: intents, state, events, leases, tasks, plans, workflows, portfolios, costs, governance policy, traces (RFC-0020). */
export const intentsService = defineService({
  name: "intents",
  env: z.object({
    LEASE_SWEEP_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(1000), "how often expired leases are swept"),
    CHECKPOINT_BATCH_EVENTS: documented(
      z.coerce.number().int().min(1).max(10_000).default(100),
      "RFC 0019 checkpoints: one every this many events of an intent, also the most one covers (docs/verifiable-logs.md)",
    ),
    CHECKPOINT_MAX_AGE_MS: documented(z.coerce.number().int().min(1000).default(300_000), "RFC 0019 checkpoints: or once an intent's oldest unchecked event is this old"),
    CHECKPOINT_SWEEP_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(30_000), "how often the checkpoint sweeper looks"),
  }),
  options: (config) => ({
    leaseSweepIntervalMs: config.LEASE_SWEEP_INTERVAL_MS,
    checkpoints: { batchEvents: config.CHECKPOINT_BATCH_EVENTS, maxAgeMs: config.CHECKPOINT_MAX_AGE_MS, intervalMs: config.CHECKPOINT_SWEEP_INTERVAL_MS },
  }),
  start: startIntentsService,
});
