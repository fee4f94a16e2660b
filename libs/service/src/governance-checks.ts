import { type Caller, GOVERNANCE_CHECKS_PER_REQUEST, governancePolicyCommands, type GovernedWriteKind } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import { TurnBatchedChecks } from "./turn-batched-checks";

type GovernanceCheck = { intent_id: string; kind: GovernedWriteKind; caller: Caller };

/**
 * Governance checks (spec 2.11) of the writes a service takes on behalf of others (channel
 * messages, memory entries), asked of the intents service, which keeps each intent's policy:
 * governance.check_many per event-loop turn, governance.check for a lone one (TurnBatchedChecks).
 */
export class GovernanceChecks {
  private readonly checks: TurnBatchedChecks<GovernanceCheck>;

  constructor(client: BusClient, maxPerRequest = GOVERNANCE_CHECKS_PER_REQUEST) {
    this.checks = new TurnBatchedChecks<GovernanceCheck>(
      ({ caller, intent_id, kind }) => client.request(governancePolicyCommands.check, caller, { intent_id, kind }),
      // The request's own caller is the first check's: each verdict uses its own check's caller.
      (checks) => client.request(governancePolicyCommands.checkMany, checks[0]!.caller, { checks }),
      maxPerRequest,
      "governance check",
    );
  }

  /** Resolves when the policy of the intent allows the caller's write of this kind; rejects with its 403 otherwise. */
  async assertAllowed(caller: Caller, intentId: string, kind: GovernedWriteKind): Promise<void> {
    await this.checks.ask({ intent_id: intentId, kind, caller });
  }
}
