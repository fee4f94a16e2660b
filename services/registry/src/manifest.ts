import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { documented } from "@intentmesh/telemetry";
import { startRegistryService } from "./service";

/** The registry: agents, heartbeats, the health lifecycle and its sweeper, drain, pools. */
export const registryService = defineService({
  name: "registry",
  env: z.object({
    AGENT_SWEEP_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(1000), "how often heartbeat silence is swept (unhealthy, dead)"),
    DRAIN_CHECK_SECONDS: documented(z.coerce.number().int().min(1).default(5), "how often a draining agent's remaining leases are counted"),
  }),
  options: (config) => ({ sweepIntervalMs: config.AGENT_SWEEP_INTERVAL_MS, drainCheckSeconds: config.DRAIN_CHECK_SECONDS }),
  start: startRegistryService,
});
