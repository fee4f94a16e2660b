import { baseConfigSchema, openDatabase, parseConfig } from "@intentmesh/db";
import { connectBus } from "@intentmesh/bus";
import { DEFAULT_EPISODIC_CAPACITY } from "@intentmesh/contracts";
import { createLogger, runMain, startTracing, stopOnSignals, stopTracing } from "@intentmesh/telemetry";
import { z } from "zod";
import { startMemoryService } from "./service";

const Guardrails = z
  .object({
    max_working_memory_per_task: z.number().int().min(1).nullable().optional(),
    max_episodic_memory_per_agent: z.number().int().min(1).nullable().optional(),
    allowed_semantic_namespaces: z.array(z.string().min(1)).nullable().optional(),
    denied_semantic_namespaces: z.array(z.string().min(1)).nullable().optional(),
    memory_archive_required: z.boolean().nullable().optional(),
  })
  .strict();

// Entry point of the memory service alone (one Kubernetes deployment): config -> logger -> db -> bus -> handlers -> shutdown.
await runMain("memory", async () => {
  const config = parseConfig(
    "memory",
    baseConfigSchema.extend({
      MEMORY_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(10_000),
      MEMORY_EPISODIC_CAPACITY: z.coerce.number().int().min(1).default(DEFAULT_EPISODIC_CAPACITY),
      /** The coordinator guardrails of 2.14 as JSON, e.g. {"denied_semantic_namespaces":["secrets.*"]}. */
      MEMORY_GUARDRAILS: z
        .string()
        .default("{}")
        .transform((text, ctx) => {
          try {
            return Guardrails.parse(JSON.parse(text));
          } catch (error) {
            ctx.addIssue({ code: "custom", message: `MEMORY_GUARDRAILS must be a JSON object of the 2.14 guardrails: ${(error as Error).message}` });
            return z.NEVER;
          }
        }),
    }),
  );
  startTracing("memory");
  const logger = createLogger("memory", config.LOG_LEVEL);
  const database = await openDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolSize: config.DATABASE_POOL_SIZE });
  const bus = await connectBus(config.NATS_URL, "memory", config.BUS_NAMESPACE);
  const service = await startMemoryService({
    bus,
    database,
    logger,
    sweepIntervalMs: config.MEMORY_SWEEP_INTERVAL_MS,
    episodicCapacity: config.MEMORY_EPISODIC_CAPACITY,
    guardrails: config.MEMORY_GUARDRAILS,
  });
  stopOnSignals(logger, [() => service.stop(), () => bus.close(), () => database.close(), stopTracing]);
});
