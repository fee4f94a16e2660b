import { runService } from "@intentmesh/service";
import { memoryEnvSchema } from "./config";
import { startMemoryService } from "./service";

// Entry point of the memory service alone (one Kubernetes deployment).
await runService("memory", memoryEnvSchema, ({ config, ...connections }) =>
  startMemoryService({
    ...connections,
    sweepIntervalMs: config.MEMORY_SWEEP_INTERVAL_MS,
    episodicCapacity: config.MEMORY_EPISODIC_CAPACITY,
    guardrails: config.MEMORY_GUARDRAILS,
  }),
);
