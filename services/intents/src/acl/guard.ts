import { intentAccessOf, permissionNeeded, type Caller, type Clock, type CommandDef, type IntentAccessRule } from "@intentmesh/contracts";
import { rowsOf, withParams, type DatabaseHandle, type Tx } from "@intentmesh/db";
import type { CommandGroup, HandlersOf } from "@intentmesh/service";
import { assertPermission, bypassesAcl } from "./rules";
import { readAccessFacts, readOwnedAccessFacts, type AccessFacts } from "./statements";

type Query = DatabaseHandle["query"];
type Located = Extract<IntentAccessRule, { needs: unknown }>;

/**
 * The intents service's one decision point for access control: every command it serves passes
 * here with the rule the catalogue gives it (libs/contracts intent-access.ts), and the decision
 * is the rule of rules.ts on facts read when the request is served (no cache: a change that has
 * answered binds every later request on every replica).
 *
 * - `wrap` puts the check before a group's handlers: one statement (the intent's ACL head and
 *   the entries naming the caller) before the handler runs, so a refused request writes nothing.
 * - The hot paths (get, append an event, list events, patch state) read the intent's row anyway;
 *   they are served unwrapped and call `afterRead` with the ACL policy their own statement read,
 *   so an intent without an ACL costs them nothing more (docs/benchmarks.md). Recording a cost
 *   (costs/handlers.ts) is served unwrapped too: its statement writes only when the intent has no
 *   ACL or the handler has called `check`.
 * - The task moves (claim, start, complete, fail, cancel) read the facts with the task, under the
 *   intent's lock and before any write, and decide with `assertAllowed` (tasks/moves.ts).
 */
export class IntentAccessGuard {
  constructor(
    private readonly query: Query,
    private readonly clock: Clock,
  ) {}

  /** The group's handlers, each behind its command's rule; `checkedInHandler` names the hot paths that call afterRead. */
  wrap<G extends CommandGroup>(group: G, handlers: HandlersOf<G>, checkedInHandler: readonly (keyof G)[] = []): HandlersOf<G> {
    const wrapped = {} as Record<keyof G, unknown>;
    for (const key of Object.keys(group) as (keyof G)[]) {
      const handler = handlers[key] as (input: unknown, caller: Caller) => Promise<unknown>;
      const rule = intentAccessOf(group[key]!);
      if (!rule || !("needs" in rule) || checkedInHandler.includes(key)) {
        wrapped[key] = handler;
        continue;
      }
      if (rule.from === "resource") throw new Error(`${group[key]!.subject}: the intents service finds every intent from its input`);
      wrapped[key] = async (input: unknown, caller: Caller) => {
        await this.require(rule, input as Record<string, unknown>, caller);
        return handler(input, caller);
      };
    }
    return wrapped as HandlersOf<G>;
  }

  /** 403 INTENT_ACCESS_DENIED unless the caller holds what the rule needs; an absent intent, task or trace is left to the handler's 404. */
  private async require(rule: Located, input: Record<string, unknown>, caller: Caller): Promise<void> {
    if (bypassesAcl(caller)) return;
    const facts =
      rule.from === "task_id" || rule.from === "plan_id" || rule.from === "trace_id"
        ? await readOwnedAccessFacts(this.query, rule.from, String(input[rule.from]), caller)
        : await readAccessFacts(this.query, String(rule.from === "body.intent_id" ? (input.body as Record<string, unknown>).intent_id : input.intent_id), caller);
    if (!facts) return;
    assertPermission(facts.intentId, facts.head, facts.entries, caller, rule.needs, this.clock.now());
  }

  /**
   * The command's rule for an intent the caller's handler has not read yet (the hot paths' slower
   * branches). `query`: where the facts are read, a transaction's own connection (queryOn) for a
   * handler that checks inside its transaction.
   */
  async check(def: CommandDef, intentId: string, caller: Caller, query: Query = this.query): Promise<void> {
    const needs = permissionNeeded(def);
    if (!needs || bypassesAcl(caller)) return;
    const facts = await readAccessFacts(query, intentId, caller);
    if (facts) assertPermission(intentId, facts.head, facts.entries, caller, needs, this.clock.now());
  }

  /**
   * For a handler that read the facts itself, in a statement of its own transaction that it makes
   * anyway (the task moves: tasks/locked-reads.ts), before it writes anything: the command's rule.
   */
  assertAllowed(def: CommandDef, facts: AccessFacts, caller: Caller): void {
    const needs = permissionNeeded(def);
    if (!needs || bypassesAcl(caller) || facts.head.policy === null) return;
    assertPermission(facts.intentId, facts.head, facts.entries, caller, needs, this.clock.now());
  }

  /**
   * For a hot path that read the intent's row itself: `aclPolicy` is what that row says (null: no
   * ACL, nothing to decide). Otherwise the same check as `wrap`, with the command's own rule.
   */
  async afterRead(def: CommandDef, intentId: string, aclPolicy: string | null | undefined, caller: Caller, query: Query = this.query): Promise<void> {
    // Only a row that says "no ACL" skips the check: a statement that did not read the column checks.
    if (aclPolicy === null) return;
    await this.check(def, intentId, caller, query);
  }
}

/** Statements of the access guard on an open transaction's connection (which holds the locks it took), not on another of the pool. */
export const queryOn =
  (tx: Tx): Query =>
  async <T>(_name: string, text: string, params: unknown[]) =>
    rowsOf<T>(await tx.execute(withParams(text, params)));
