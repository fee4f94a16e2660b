import type { Command } from "commander";
import type { ResponseOf } from "@intentmesh/sdk";
import { contextFor, parseJsonObject, parsePositiveInt, type Runtime } from "../context";
import { brief, statusStyle, type Output } from "../output";
import { follow } from "./events";

type Intent = ResponseOf<"intentsGet">;
const FINAL = new Set(["completed", "abandoned"]);

export function registerIntents(program: Command, runtime: Runtime): void {
  const intents = program.command("intents").description("list, show, create and watch intents");

  intents
    .command("list")
    .description("list intents, newest change first")
    .option("--status <statuses>", "comma-separated statuses (draft, active, blocked, completed, abandoned, suspended_awaiting_input)")
    .option("--created-by <name>", "only intents created by this name")
    .option("--limit <n>", "at most n intents (default 50, at most 500)")
    .action(async (options: { status?: string; createdBy?: string; limit?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const page = await ctx.client.ops.intentsList({ query: { status: options.status, created_by: options.createdBy, limit: options.limit ? parsePositiveInt(options.limit, "--limit") : undefined } });
      if (ctx.out.json) return ctx.out.data(page.intents);
      ctx.out.table(page.intents, [
        { header: "ID", value: (i) => i.id },
        { header: "STATUS", value: (i) => i.status, style: (i) => statusStyle(i.status) },
        { header: "V", value: (i) => String(i.version) },
        { header: "UPDATED", value: (i) => ctx.out.ago(i.updated_at) },
        { header: "TITLE", value: (i) => i.title },
      ], "no intents");
      if (page.has_more) ctx.out.line(ctx.out.style(`more: intentmesh intents list --limit ${page.intents.length * 2}`, "dim"));
    });

  intents
    .command("show")
    .description("one intent: status, version, state, and the question it waits on")
    .argument("<intent>", "intent id")
    .action(async (intentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command, runtime);
      const intent = await ctx.client.ops.intentsGet({ intent_id: intentId });
      if (ctx.out.json) return ctx.out.data(intent);
      showIntent(ctx.out, intent);
    });

  intents
    .command("create")
    .description("create an intent (draft unless --active)")
    .argument("<title>", "what the intent is for")
    .option("--description <text>", "a longer description")
    .option("--state <json>", "initial state, a JSON object")
    .option("--constraints <json>", "constraints, a JSON object (a budget goes under budget)")
    .option("--active", "create it active instead of draft")
    .action(async (title: string, options: { description?: string; state?: string; constraints?: string; active?: boolean }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const intent = await ctx.client.ops.intentsCreate({
        body: {
          title,
          ...(options.description ? { description: options.description } : {}),
          ...(options.state ? { state: parseJsonObject(options.state, "--state") } : {}),
          ...(options.constraints ? { constraints: parseJsonObject(options.constraints, "--constraints") } : {}),
          ...(options.active ? { status: "active" as const } : {}),
        },
      });
      if (ctx.out.json) return ctx.out.data(intent);
      ctx.out.line(`created ${ctx.out.style(intent.id, "bold")} (${ctx.out.status(intent.status)}, version ${intent.version})`);
    });

  intents
    .command("watch")
    .description("show an intent, then its events as they happen, until it is completed or abandoned (or Ctrl-C)")
    .argument("<intent>", "intent id")
    .option("--count <n>", "stop after n events")
    .option("--until <event_type>", "stop after the first event of this type")
    .action(async (intentId: string, options: { count?: string; until?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const count = options.count ? parsePositiveInt(options.count, "--count") : undefined;
      // The log's end first, then the intent: what happens after the read is streamed, nothing falls between.
      const tail = await ctx.client.ops.intentsListEvents({ intent_id: intentId, query: { tail: "true", limit: 1 } });
      const intent = await ctx.client.ops.intentsGet({ intent_id: intentId });
      if (!ctx.out.json) {
        showIntent(ctx.out, intent);
        ctx.out.line(ctx.out.style("-- watching; Ctrl-C to stop", "dim"));
      }
      if (FINAL.has(intent.status)) return;
      const stream = ctx.client.subscribe("intents", intentId, { from: { lastEventId: String(tail.events.at(-1)?.sequence ?? 0) }, signal: runtime.interrupted });
      await follow(runtime, ctx.out, stream, (message, seen) => {
        const ended = message.event === "status_changed" && FINAL.has(String(message.data.payload.to));
        return ended || (count !== undefined && seen >= count) || message.event === options.until;
      });
    });
}

export function showIntent(out: Output, intent: Intent): void {
  const { _suspension: suspension, ...state } = intent.state as { _suspension?: Record<string, unknown> } & Record<string, unknown>;
  out.fields([
    ["intent", out.style(intent.id, "bold")],
    ["title", intent.title],
    ["status", out.status(intent.status)],
    ["version", String(intent.version)],
    ["created", `${out.ago(intent.created_at)} by ${intent.created_by}`],
    ["updated", out.ago(intent.updated_at)],
    ["state", brief(state, 200)],
  ]);
  if (suspension && !suspension.resolution) {
    const choices = Array.isArray(suspension.choices) ? (suspension.choices as { value: string; label: string }[]).map((c) => `${c.value} (${c.label})`).join(", ") : "";
    out.line();
    out.line(out.style("waiting for an answer:", "yellow", "bold"));
    out.fields([
      ["question", String(suspension.question)],
      ["type", String(suspension.response_type)],
      ...(choices ? [["choices", choices] as [string, string]] : []),
      ["expires", suspension.expires_at ? out.ago(String(suspension.expires_at)) : "never"],
      ["answer with", `intentmesh respond ${intent.id} <answer>`],
    ]);
  }
}
