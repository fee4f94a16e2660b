import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { startRegistryService } from "./service";

/** The registry: agents, heartbeats, the health lifecycle and its sweeper, drain, pools. */
export const registryService = defineService({
  name: "registry",
  env: z.object({
    AGENT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
    DRAIN_CHECK_SECONDS: z.coerce.number().int().min(1).default(5),
  }),
  options: (config) => ({ sweepIntervalMs: config.AGENT_SWEEP_INTERVAL_MS, drainCheckSeconds: config.DRAIN_CHECK_SECONDS }),
  start: startRegistryService,
});
