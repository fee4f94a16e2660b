import { and, eq } from "drizzle-orm";
import { appError, type JsonObject } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { tasks } from "../db/schema-tasks";
import { intents } from "../db/schema";
import type { TaskRow } from "../tasks/store";
import { assertOutputs, parseRef, resolveInputs, type IoTypes } from "./rules";

/** What the task moves ask of a workflow phase's contract (tasks/moves.ts), in the move's transaction. */

async function typesOf(tx: Tx, intentId: string): Promise<IoTypes> {
  const [row] = await tx.select({ state: intents.state }).from(intents).where(eq(intents.id, intentId));
  const types = (row?.state as Record<string, unknown> | undefined)?._io_types;
  return typeof types === "object" && types !== null && !Array.isArray(types) ? (types as IoTypes) : {};
}

/**
 * RFC 0024 3.1, 3.2: a phase's task is claimed only when every declared input resolves; its
 * input becomes the resolved values (with what it held). 409 UNRESOLVABLE_INPUT names the refs
 * that do not resolve (an upstream phase not completed, a key it did not record, a static value
 * absent) and the ones whose value does not match the upstream's declared type. Null for a task
 * without a contract.
 */
export async function claimInputs(tx: Tx, task: TaskRow): Promise<JsonObject | null> {
  const contract = task.ioContract;
  if (!contract || !Object.keys(contract.inputs).length) return null;
  const phases = [...new Set(Object.values(contract.inputs).map(parseRef).flatMap((r) => (r?.kind === "phase" ? [r.phase] : [])))];
  const upstreamRows = phases.length && task.planId ? await tx.select().from(tasks).where(and(eq(tasks.planId, task.planId), eq(tasks.intentId, task.intentId))) : [];
  const upstream = new Map(
    upstreamRows
      .filter((r) => r.ioContract && phases.includes(r.ioContract.phase_name))
      .map((r) => [r.ioContract!.phase_name, { output: r.output ?? null, completed: r.status === "completed", outputs: r.ioContract!.outputs }]),
  );
  const result = resolveInputs(contract.inputs, { upstream, trigger: {}, initialState: {} }, await typesOf(tx, task.intentId));
  // Static inputs were resolved at trigger time under their input names.
  for (const [name, ref] of Object.entries(contract.inputs)) {
    if (ref.startsWith("$") && contract.static_inputs[name] !== undefined) {
      result.resolved[name] = contract.static_inputs[name];
      result.unresolvable = result.unresolvable.filter((r) => r !== ref);
    }
  }
  if (result.unresolvable.length || result.mismatched.length) {
    const refs = [...result.unresolvable, ...result.mismatched.map((m) => m.ref)];
    throw appError(
      "UNRESOLVABLE_INPUT",
      `task ${task.id} (phase ${contract.phase_name}) cannot be claimed: ${[
        ...result.unresolvable.map((r) => `input ${r} does not resolve yet`),
        ...result.mismatched.map((m) => `input ${m.input} (${m.ref}) is ${m.actual}, declared ${m.expected}`),
      ].join("; ")}`,
      { error: "UnresolvableInputError", task_id: task.id, phase_name: contract.phase_name, unresolvable_refs: refs, type_mismatches: result.mismatched },
    );
  }
  return { ...task.input, ...result.resolved } as JsonObject;
}

/** RFC 0024 3.3: a phase's task completes only with its declared outputs, of their declared types (422 naming the field). */
export async function checkCompletionOutputs(tx: Tx, task: TaskRow, output: JsonObject | null): Promise<void> {
  const contract = task.ioContract;
  if (!contract?.outputs) return;
  assertOutputs(task.id, contract.phase_name, contract.outputs, output, await typesOf(tx, task.intentId));
}
