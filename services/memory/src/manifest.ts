import { defineService } from "@intentmesh/service";
import { memoryEnvSchema } from "./config";
import { startMemoryService } from "./service";

/** The memory service: working, episodic and semantic memory (docs/memory.md). */
export const memoryService = defineService({
  name: "memory",
  env: memoryEnvSchema,
  options: (config) => ({
    sweepIntervalMs: config.MEMORY_SWEEP_INTERVAL_MS,
    episodicCapacity: config.MEMORY_EPISODIC_CAPACITY,
    guardrails: config.MEMORY_GUARDRAILS,
  }),
  start: startMemoryService,
});
