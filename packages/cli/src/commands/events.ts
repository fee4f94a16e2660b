import type { Command } from "commander";
import { intentEventTypes, TASK_EVENT_PREFIX, type StreamMessage } from "@intentmesh/sdk";
import { contextFor, parsePositiveInt, type Runtime } from "../context";
import { brief, type Output } from "../output";

type IntentMessage = StreamMessage<"intents">;

/** One event as a line: time, sequence, type, actor, what happened. */
export function eventLine(out: Output, message: IntentMessage): string {
  const event = message.data;
  const time = new Date(event.created_at).toISOString().slice(11, 19);
  return [out.style(time, "dim"), out.style(`#${event.sequence}`, "dim"), out.style(event.event_type, "cyan"), out.style(event.actor, "magenta"), summary(out, event.event_type, event.payload)].join("  ").trimEnd();
}

function summary(out: Output, type: string, payload: Record<string, unknown>): string {
  switch (type) {
    case intentEventTypes.statusChanged:
      return `${out.status(String(payload.from))} → ${out.status(String(payload.to))}${payload.reason ? `  (${brief(payload.reason, 60)})` : ""}`;
    case intentEventTypes.suspended: {
      // The record is the payload's `suspension` (the server's), or the payload itself (the official clients' append).
      const record = (typeof payload.suspension === "object" && payload.suspension !== null ? payload.suspension : payload) as Record<string, unknown>;
      const choices = Array.isArray(record.choices) ? ` [${(record.choices as { value: string }[]).map((c) => c.value).join("/")}]` : "";
      return `asks: ${out.style(String(record.question ?? ""), "bold")}${choices}  (${String(record.response_type ?? "choice")})`;
    }
    case intentEventTypes.resumed:
      return `answered ${out.style(brief(JSON.stringify(payload.value ?? payload.response ?? null), 60), "bold")}${payload.responded_by ? ` by ${String(payload.responded_by)}` : ""}`;
    case intentEventTypes.suspensionExpired:
      return `no answer in time: ${String(payload.status ?? "")}`;
    case intentEventTypes.statePatched:
      return brief(payload.patches, 100);
    default:
      if (type.startsWith(TASK_EVENT_PREFIX) && typeof payload.task_id === "string") {
        const who = typeof payload.agent_id === "string" ? ` by ${payload.agent_id}` : "";
        const why = payload.error ? `: ${brief(payload.error, 60)}` : payload.reason ? ` (${String(payload.reason)})` : "";
        return `task ${payload.task_id.slice(0, 8)} ${out.status(String(payload.status))}${who}${why}`;
      }
      return brief(payload, 100);
  }
}

/** Follows an intent's stream, printing each event (JSON lines with --json), until `stop` says so or Ctrl-C. */
export async function follow(
  runtime: Runtime,
  out: Output,
  stream: AsyncIterableIterator<IntentMessage>,
  stop: (message: IntentMessage, seen: number) => boolean,
): Promise<void> {
  let seen = 0;
  for await (const message of stream) {
    seen += 1;
    if (out.json) out.data(message.data, true);
    else out.line(eventLine(out, message));
    if (stop(message, seen)) return;
  }
  if (runtime.interrupted.aborted) throw new DOMException("interrupted", "AbortError");
}

export function registerEvents(program: Command, runtime: Runtime): void {
  const events = program.command("events").description("an intent's event log");
  events
    .command("tail")
    .description("print an intent's events as they happen; resumable with --after <event id> (every line's #sequence works too)")
    .argument("<intent>", "intent id")
    .option("--after <event>", "start after this event (an event id or a sequence number), to resume where a previous tail stopped")
    .option("--from-start", "print the whole log first")
    .option("--count <n>", "stop after n events")
    .option("--until <event_type>", "stop after the first event of this type")
    .action(async (intentId: string, options: { after?: string; fromStart?: boolean; count?: string; until?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const count = options.count ? parsePositiveInt(options.count, "--count") : undefined;
      const from = options.after ? { lastEventId: options.after } : options.fromStart ? ("start" as const) : ("now" as const);
      const stream = ctx.client.subscribe("intents", intentId, { from, signal: runtime.interrupted });
      await follow(runtime, ctx.out, stream, (message, seen) => (count !== undefined && seen >= count) || message.event === options.until);
    });
}
