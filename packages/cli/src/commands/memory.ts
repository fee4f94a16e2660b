import type { Command } from "commander";
import { isApiError, retryOnConflict } from "@intentmesh/sdk";
import { contextFor, parseJsonObject, parsePositiveInt, type Runtime } from "../context";
import { brief } from "../output";

export function registerMemory(program: Command, runtime: Runtime): void {
  const memory = program.command("memory").description("an agent's memory entries, by namespace and key");
  memory
    .command("get")
    .description("the acting agent's (--agent) entry under a namespace and key")
    .argument("<namespace>", "namespace, e.g. drafts.launch")
    .argument("<key>", "key")
    .action(async (namespace: string, key: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command, runtime);
      const entry = await ctx.client.ops.memoryLookup({ agent_id: ctx.agentId(), namespace, key });
      if (ctx.out.json) return ctx.out.data(entry);
      ctx.out.fields([
        ["entry", entry.id],
        ["memory", `${entry.memory_type}, version ${entry.version}`],
        ["updated", ctx.out.ago(entry.updated_at)],
        ["tags", entry.tags.join(", ") || "-"],
        ["value", brief(entry.value, 2000)],
      ]);
    });

  memory
    .command("set")
    .description("create or replace the acting agent's (--agent) entry under a namespace and key")
    .argument("<namespace>", "namespace")
    .argument("<key>", "key")
    .argument("<value>", "the value, a JSON object")
    .option("--type <memory_type>", "working (default), episodic or semantic")
    .option("--ttl <seconds>", "expire after this many seconds")
    .action(async (namespace: string, key: string, text: string, options: { type?: string; ttl?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const agentId = ctx.agentId();
      const value = parseJsonObject(text, "<value>");
      const ttl = options.ttl ? parsePositiveInt(options.ttl, "--ttl") : undefined;
      const body = { value, ...(options.type ? { memory_type: options.type as "working" } : {}), ...(ttl ? { ttl_seconds: ttl } : {}) };
      // Create; when the entry exists, update it at its current version (again if another writer slipped in).
      const entry = await retryOnConflict(async () => {
        const existing = await ctx.client.ops.memoryLookup({ agent_id: agentId, namespace, key }).catch((error: unknown) => {
          if (isApiError(error, "ENTRY_NOT_FOUND")) return undefined;
          throw error;
        });
        return ctx.client.ops.memoryPut({ agent_id: agentId, namespace, key, body, ...(existing ? { ifMatch: existing.version } : {}) });
      });
      if (ctx.out.json) return ctx.out.data(entry);
      ctx.out.line(`${namespace}/${key} at version ${entry.version} (${entry.memory_type})`);
    });
}
