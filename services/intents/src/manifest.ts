import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { startIntentsService } from "./service";

/** The intents service: intents, state, events, leases, tasks, portfolios, costs, governance policy. */
export const intentsService = defineService({
  name: "intents",
  env: z.object({ LEASE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000) }),
  options: (config) => ({ leaseSweepIntervalMs: config.LEASE_SWEEP_INTERVAL_MS }),
  start: startIntentsService,
});
