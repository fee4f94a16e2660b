import { ACCESS_CHECKS_PER_REQUEST, aclCommands, AppError, type Caller, intentAccessOf, type IntentPermission } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { CommandGroup, HandlersOf } from "./service-core";
import { TurnBatchedChecks } from "./turn-batched-checks";

type AccessCheck = { intent_id: string; permission: IntentPermission; caller: Caller };

/**
 * Access-control checks (RFC-0011, docs/access-control.md) of what a service does on behalf of a
 * caller to something that belongs to an intent (a channel, a message, a memory entry, an
 * approval), asked of the intents service, which keeps each intent's ACL and decides.
 *
 * Like GovernanceChecks: the checks of one event-loop turn travel in one acl.check_many request
 * at the end of the turn, a lone check as acl.check. Nothing is cached: each check is read by the
 * intents service after the request that asked it arrived, so a revocation that has answered
 * binds it, on every replica.
 */
export class IntentAccessChecks {
  private readonly checks: TurnBatchedChecks<AccessCheck>;

  constructor(client: BusClient, maxPerRequest = ACCESS_CHECKS_PER_REQUEST) {
    this.checks = new TurnBatchedChecks<AccessCheck>(
      ({ caller, intent_id, permission }) => client.request(aclCommands.check, caller, { intent_id, permission }),
      // The request's own caller is the first check's: each verdict uses its own check's caller.
      (checks) => client.request(aclCommands.checkMany, checks[0]!.caller, { checks }),
      maxPerRequest,
      "access check",
    );
  }

  /** Resolves when the caller holds `permission` on the intent; rejects with 403 INTENT_ACCESS_DENIED (or 404) otherwise. */
  async assert(caller: Caller, intentId: string, permission: IntentPermission): Promise<void> {
    await this.checks.ask({ intent_id: intentId, permission, caller });
  }

  /**
   * A command group's handlers, each behind its command's rule (libs/contracts intent-access.ts):
   * `intent_id` rules find the intent in the input; `resource` rules ask `resources`, the
   * service's own lookup of the intents the resource belongs to (a channel's, a memory entry's;
   * none: nothing to check, the handler answers its 404 or works on no intent).
   * `checkedInHandler` names the commands whose handlers check their rule themselves (with
   * IntentWriteChecks, beside the governance check of the same write).
   */
  wrap<G extends CommandGroup>(
    group: G,
    handlers: HandlersOf<G>,
    resources?: (command: keyof G, input: never) => Promise<readonly string[]>,
    checkedInHandler: readonly (keyof G)[] = [],
  ): HandlersOf<G> {
    const wrapped = {} as Record<keyof G, unknown>;
    for (const key of Object.keys(group) as (keyof G)[]) {
      const handler = handlers[key] as (input: unknown, caller: Caller) => Promise<unknown>;
      const rule = intentAccessOf(group[key]!);
      if (!rule || !("needs" in rule) || checkedInHandler.includes(key)) {
        wrapped[key] = handler;
        continue;
      }
      if (rule.from !== "intent_id" && rule.from !== "resource") throw new Error(`${group[key]!.subject}: ${rule.from} rules are checked by the intents service`);
      if (rule.from === "resource" && !resources) throw new Error(`${group[key]!.subject}: a resource rule needs the service's lookup of its intents`);
      wrapped[key] = async (input: unknown, caller: Caller) => {
        if (rule.from === "intent_id") await this.assert(caller, String((input as { intent_id: unknown }).intent_id), rule.needs);
        else {
          // A filter or scope naming an intent that does not exist protects nothing: the handler answers for it.
          const intentIds = [...new Set(await resources!(key, input as never))];
          await Promise.all(intentIds.map((intentId) => this.assert(caller, intentId, rule.needs).catch(ignoreMissingIntent)));
        }
        return handler(input, caller);
      };
    }
    return wrapped as HandlersOf<G>;
  }
}

function ignoreMissingIntent(error: unknown): void {
  if (error instanceof AppError && error.code === "INTENT_NOT_FOUND") return;
  throw error;
}
