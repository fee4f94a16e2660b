import { z } from "zod";
import { runService } from "@intentmesh/service";
import { startIntentsService } from "./service";

// Entry point of the intents service alone (one Kubernetes deployment).
await runService(
  "intents",
  z.object({ LEASE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000) }),
  ({ config, ...connections }) => startIntentsService({ ...connections, leaseSweepIntervalMs: config.LEASE_SWEEP_INTERVAL_MS }),
);
