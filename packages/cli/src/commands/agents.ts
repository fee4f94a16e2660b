import type { Command } from "commander";
import { retryOnConflict } from "@intentmesh/sdk";
import { contextFor, parsePositiveInt, type Runtime } from "../context";
import { brief, statusStyle } from "../output";

export function registerAgents(program: Command, runtime: Runtime): void {
  const agents = program.command("agents").description("the agent registry: list, show, drain");
  agents
    .command("list")
    .description("registered agents (active ones by default; coordinators and admins)")
    .option("--status <statuses>", "comma-separated: active, draining, unhealthy, dead, deregistered", "active")
    .option("--role <role_id>", "members of one pool")
    .option("--capability <names>", "agents with ANY of these comma-separated capabilities")
    .option("--limit <n>", "at most n (default 100)")
    .action(async (options: { status: string; role?: string; capability?: string; limit?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const list = await ctx.client.ops.agentsList({ query: { status: options.status, role_id: options.role, capabilities: options.capability, limit: options.limit ? parsePositiveInt(options.limit, "--limit") : undefined } });
      if (ctx.out.json) return ctx.out.data(list.agents);
      ctx.out.table(list.agents, [
        { header: "AGENT", value: (a) => a.agent_id },
        { header: "STATUS", value: (a) => a.status, style: (a) => statusStyle(a.status) },
        { header: "ROLE", value: (a) => a.role_id ?? "-" },
        { header: "LOAD", value: (a) => `${a.capacity.current_load}/${a.capacity.max_concurrent_tasks ?? "-"}` },
        { header: "HEARTBEAT", value: (a) => ctx.out.ago(a.last_heartbeat_at) },
        { header: "CAPABILITIES", value: (a) => a.capabilities.join(",") },
      ], "no agents");
    });

  agents
    .command("show")
    .description("an agent's full record")
    .argument("<agent>", "agent id")
    .action(async (agentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command, runtime);
      const agent = await ctx.client.ops.agentsGet({ agent_id: agentId });
      if (ctx.out.json) return ctx.out.data(agent);
      ctx.out.fields([
        ["agent", ctx.out.style(agent.agent_id, "bold")],
        ["status", ctx.out.status(agent.status)],
        ["role", agent.role_id ?? "-"],
        ["name", agent.name ?? "-"],
        ["capabilities", agent.capabilities.join(", ") || "-"],
        ["load", `${agent.capacity.current_load} of ${agent.capacity.max_concurrent_tasks ?? "unlimited"}`],
        ["heartbeat", `${ctx.out.ago(agent.last_heartbeat_at)} (every ${agent.heartbeat_config.interval_seconds}s)`],
        ["registered", ctx.out.ago(agent.registered_at)],
        ["version", String(agent.version)],
        ["metadata", brief(agent.metadata, 200)],
      ]);
    });

  agents
    .command("drain")
    .description("ask an agent to drain: it finishes its work, takes nothing new, and is deregistered once it holds no lease")
    .argument("<agent>", "agent id")
    .option("--timeout <seconds>", "drain timeout (default 120)")
    .option("--reason <text>", "why (the agent sees it in its drain command)")
    .action(async (agentId: string, options: { timeout?: string; reason?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const timeout = options.timeout ? parsePositiveInt(options.timeout, "--timeout") : undefined;
      const agent = await retryOnConflict(async () => {
        const current = await ctx.client.ops.agentsGet({ agent_id: agentId });
        return ctx.client.ops.agentsChangeStatus({
          agent_id: agentId,
          ifMatch: current.version,
          body: { status: "draining", ...(timeout ? { drain_timeout_seconds: timeout } : {}), ...(options.reason ? { reason: options.reason } : {}) },
        });
      });
      if (ctx.out.json) return ctx.out.data(agent);
      ctx.out.line(`${agent.agent_id} is ${ctx.out.status(agent.status)}`);
    });
}
