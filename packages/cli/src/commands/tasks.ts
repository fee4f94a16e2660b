import type { Command } from "commander";
import type { ResponseOf } from "@intentmesh/sdk";
import { contextFor, parseJsonObject, parsePositiveInt, type Runtime } from "../context";
import { statusStyle, type Output } from "../output";

type Task = ResponseOf<"tasksGet">;

export function registerTasks(program: Command, runtime: Runtime): void {
  const tasks = program.command("tasks").description("an intent's tasks: list, create, claim, complete");
  tasks
    .command("list")
    .description("the tasks of an intent, oldest first")
    .argument("<intent>", "intent id")
    .option("--status <statuses>", "comma-separated: pending, ready, claimed, running, blocked, completed, failed, cancelled, skipped")
    .option("--agent-filter <agent>", "only tasks assigned to this agent")
    .option("--limit <n>", "at most n (default 100)")
    .action(async (intentId: string, options: { status?: string; agentFilter?: string; limit?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const page = await ctx.client.ops.tasksList({ intent_id: intentId, query: { status: options.status, assigned_agent: options.agentFilter, limit: options.limit ? parsePositiveInt(options.limit, "--limit") : undefined } });
      const list = Array.isArray(page) ? page : page.tasks;
      if (ctx.out.json) return ctx.out.data(list);
      ctx.out.table(list, [
        { header: "TASK", value: (t) => t.id },
        { header: "STATUS", value: (t) => t.status, style: (t) => statusStyle(t.status) },
        { header: "AGENT", value: (t) => t.assigned_agent ?? "-" },
        { header: "TRY", value: (t) => String(t.attempt) },
        { header: "UPDATED", value: (t) => ctx.out.ago(t.updated_at) },
        { header: "TITLE", value: (t) => t.title },
      ], "no tasks");
    });

  tasks
    .command("create")
    .description("add a task to an intent (coordinators and admins)")
    .argument("<intent>", "intent id")
    .argument("<title>", "what the task is")
    .option("--input <json>", "the task's input, a JSON object")
    .option("--assign <agent>", "assign it to this agent")
    .action(async (intentId: string, title: string, options: { input?: string; assign?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const task = await ctx.client.ops.tasksCreate({
        intent_id: intentId,
        body: { title, ...(options.input ? { input: parseJsonObject(options.input, "--input") } : {}), ...(options.assign ? { assigned_agent: options.assign } : {}) },
      });
      print(ctx.out, task);
    });

  tasks
    .command("claim")
    .description("claim a ready task for the acting agent (--agent)")
    .argument("<task>", "task id")
    .option("--start", "start it too (claimed -> running)")
    .action(async (taskId: string, options: { start?: boolean }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const agentId = ctx.agentId();
      const ready = await ctx.client.ops.tasksGet({ task_id: taskId });
      let task = await ctx.client.ops.tasksClaim({ task_id: taskId, ifMatch: ready.version }, { agentId, replayable: true });
      if (options.start) task = await ctx.client.ops.tasksStart({ task_id: taskId, ifMatch: task.version }, { agentId, replayable: true });
      print(ctx.out, task);
    });

  tasks
    .command("complete")
    .description("complete a task the acting agent holds (a claimed task is started first)")
    .argument("<task>", "task id")
    .option("--output <json>", "the task's output, a JSON object")
    .action(async (taskId: string, options: { output?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const agentId = ctx.agentId();
      const output = options.output ? parseJsonObject(options.output, "--output") : undefined;
      let task = await ctx.client.ops.tasksGet({ task_id: taskId });
      if (task.status === "claimed") task = await ctx.client.ops.tasksStart({ task_id: taskId, ifMatch: task.version }, { agentId, replayable: true });
      task = await ctx.client.ops.tasksComplete({ task_id: taskId, ifMatch: task.version, body: output ? { output } : {} }, { agentId, replayable: true });
      print(ctx.out, task);
    });
}

function print(out: Output, task: Task): void {
  if (out.json) return out.data(task);
  out.line(`${task.id} ${out.status(task.status)}${task.assigned_agent ? ` (${task.assigned_agent})` : ""}: ${task.title}`);
}
