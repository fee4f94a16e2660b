import { ACCESS_CHECKS_PER_REQUEST, AppError, type Caller, type GovernedWriteKind, type IntentPermission, type WriteAllowed, writeCheckCommands } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import { TurnBatchedChecks } from "./turn-batched-checks";

type WriteCheck = { intent_id: string; permission: IntentPermission; kind: GovernedWriteKind; caller: Caller };

/** What a write check answers once access allowed the write: the governance verdict, for the asker to apply where its rules put it. */
export interface WriteVerdict {
  /** Throws the governance refusal of the write (403 GOVERNANCE_VIOLATION), if the policy refused it. */
  assertGovernance(): void;
}

const ALLOWED: WriteVerdict = { assertGovernance: () => undefined };

/**
 * The access check (IntentAccessChecks) and the governance check (GovernanceChecks) of one write
 * a service takes on an intent for a caller, asked of the intents service in one request and read
 * there in one statement (acl.check_write): one bus round trip and one primary-key read per write
 * instead of two of each. Batched by event-loop turn like both (TurnBatchedChecks), nothing cached:
 * each check is read after the request that asked it arrived, so a revocation or a policy that
 * has answered binds it, on every replica.
 */
export class IntentWriteChecks {
  private readonly checks: TurnBatchedChecks<WriteCheck, WriteAllowed>;

  constructor(client: BusClient, maxPerRequest = ACCESS_CHECKS_PER_REQUEST) {
    this.checks = new TurnBatchedChecks<WriteCheck, WriteAllowed>(
      ({ caller, intent_id, permission, kind }) => client.request(writeCheckCommands.check, caller, { intent_id, permission, kind }),
      // The request's own caller is the first check's: each verdict uses its own check's caller.
      (checks) => client.request(writeCheckCommands.checkMany, checks[0]!.caller, { checks }),
      maxPerRequest,
      "write check",
    );
  }

  /**
   * Rejects with the access refusal (403 INTENT_ACCESS_DENIED, 404 INTENT_NOT_FOUND) as
   * IntentAccessChecks.assert would; resolves to the governance verdict of the write.
   */
  async check(caller: Caller, intentId: string, permission: IntentPermission, kind: GovernedWriteKind): Promise<WriteVerdict> {
    const { governance } = await this.checks.ask({ intent_id: intentId, permission, kind, caller });
    if (!("error" in governance)) return ALLOWED;
    return {
      assertGovernance: () => {
        throw AppError.fromWire(governance.error);
      },
    };
  }

  /** A write whose intent does not exist: nothing to protect and no policy to apply (as a resource rule of IntentAccessChecks). */
  static readonly ALLOWED = ALLOWED;
}
