import { z } from "zod";
import { DEFAULT_EPISODIC_CAPACITY } from "@intentmesh/contracts";
import { documented } from "@intentmesh/telemetry";

const Guardrails = z
  .object({
    max_working_memory_per_task: z.number().int().min(1).nullable().optional(),
    max_episodic_memory_per_agent: z.number().int().min(1).nullable().optional(),
    allowed_semantic_namespaces: z.array(z.string().min(1)).nullable().optional(),
    denied_semantic_namespaces: z.array(z.string().min(1)).nullable().optional(),
    memory_archive_required: z.boolean().nullable().optional(),
  })
  .strict();

/** The variables of the memory service, beside those every service reads. */
export const memoryEnvSchema = z.object({
  MEMORY_SWEEP_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(10_000), "how often expired memory entries are swept"),
  MEMORY_EPISODIC_CAPACITY: documented(z.coerce.number().int().min(1).default(DEFAULT_EPISODIC_CAPACITY), "an agent's episodic capacity when it has none of its own (docs/memory.md)"),
  /** The coordinator guardrails of 2.14 as JSON, e.g. {"denied_semantic_namespaces":["secrets.*"]}. */
  MEMORY_GUARDRAILS: documented(
    z
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
    "the coordinator guardrails of spec 2.14 as JSON, e.g. `{\"denied_semantic_namespaces\":[\"secrets.*\"]}`",
  ),
});
