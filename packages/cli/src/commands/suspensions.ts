import type { Command } from "commander";
import { IntentmeshError } from "@intentmesh/sdk";
import { contextFor, parseJson, type Runtime } from "../context";
import { UsageError } from "../exit-codes";

interface Suspension {
  id: string;
  question: string;
  response_type: string;
  choices?: { value: string; label: string }[];
  expires_at: string | null;
  suspended_at: string;
  resolution?: string;
}

const suspensionOf = (state: Record<string, unknown>) => state._suspension as Suspension | undefined;

export function registerSuspensions(program: Command, runtime: Runtime): void {
  const suspensions = program.command("suspensions").description("intents waiting for a human's answer");
  suspensions
    .command("list")
    .description("intents suspended for input, with their questions")
    .option("--limit <n>", "at most n (default 50)")
    .action(async (options: { limit?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const page = await ctx.client.ops.intentsList({ query: { status: "suspended_awaiting_input", limit: options.limit } });
      const rows = page.intents.map((intent) => ({ intent, suspension: suspensionOf(intent.state) }));
      if (ctx.out.json) return ctx.out.data(rows.map(({ intent, suspension }) => ({ intent_id: intent.id, title: intent.title, suspension: suspension ?? null })));
      ctx.out.table(rows, [
        { header: "INTENT", value: (r) => r.intent.id },
        { header: "ASKED", value: (r) => ctx.out.ago(r.suspension?.suspended_at) },
        { header: "EXPIRES", value: (r) => (r.suspension?.expires_at ? ctx.out.ago(r.suspension.expires_at) : "never") },
        { header: "TYPE", value: (r) => r.suspension?.response_type ?? "-" },
        { header: "CHOICES", value: (r) => r.suspension?.choices?.map((c) => c.value).join("/") ?? "" },
        { header: "QUESTION", value: (r) => r.suspension?.question ?? "(no record yet)" },
      ], "no intent is waiting for an answer");
    });

  program
    .command("respond")
    .description("answer the question an intent is suspended on; the intent resumes")
    .argument("<intent>", "intent id")
    .argument("<answer>", "the answer: a choice's value, yes/no for confirm, text; JSON with --json-value (form answers)")
    .option("--json-value", "read <answer> as JSON")
    .option("--as <name>", "who answers (responded_by); default the key's identity")
    .action(async (intentId: string, answer: string, options: { jsonValue?: boolean; as?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const value = options.jsonValue ? parseJson(answer, "<answer>") : answer;
      const intent = await ctx.client.ops.intentsGet({ intent_id: intentId });
      const suspension = suspensionOf(intent.state);
      if (intent.status !== "suspended_awaiting_input" || !suspension || suspension.resolution) {
        throw new IntentmeshError("NOT_SUSPENDED", `intent ${intentId} is ${intent.status}: it waits for no answer`, 409);
      }
      if (suspension.response_type === "choice" && suspension.choices && !suspension.choices.some((c) => c.value === value)) {
        throw new UsageError(`"${answer}" is not a choice of this question: ${suspension.choices.map((c) => c.value).join(", ")}`);
      }
      const result = await ctx.client.ops.governanceRespond({ intent_id: intentId, body: { suspension_id: suspension.id, value, ...(options.as ? { responded_by: options.as } : {}) } });
      if (ctx.out.json) return ctx.out.data(result);
      ctx.out.line(`answered ${ctx.out.style(JSON.stringify(result.value), "bold")}${result.choice_label ? ` (${result.choice_label})` : ""}: intent ${intentId} resumes`);
    });
}
