import { z } from "zod";
import { runService } from "@intentmesh/service";
import { startRegistryService } from "./service";

// Entry point of the registry service alone (one Kubernetes deployment).
await runService(
  "registry",
  z.object({
    AGENT_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
    DRAIN_CHECK_SECONDS: z.coerce.number().int().min(1).default(5),
  }),
  ({ config, ...connections }) =>
    startRegistryService({ ...connections, sweepIntervalMs: config.AGENT_SWEEP_INTERVAL_MS, drainCheckSeconds: config.DRAIN_CHECK_SECONDS }),
);
