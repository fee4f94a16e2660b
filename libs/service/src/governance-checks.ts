import { appError, AppError, type Caller, GOVERNANCE_CHECKS_PER_REQUEST, governancePolicyCommands, type GovernanceVerdicts, type GovernedWriteKind } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";

interface PendingCheck {
  check: { intent_id: string; kind: GovernedWriteKind; caller: Caller };
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Governance checks (spec 2.11) of the writes a service takes on behalf of others (channel
 * messages, memory entries), asked of the intents service, which keeps each intent's policy.
 *
 * The checks asked during one event-loop turn travel together, in one governance.check_many
 * request sent at the end of the turn, instead of one request each: under load a service starts
 * many writes per turn, and each request costs a round trip on the bus and a statement in the
 * intents service. No check waits for anything but the rest of the current turn, and each is
 * sent after the write that asked it arrived, so a policy whose PUT has answered binds it: the
 * read-your-writes rule of the single check holds. A lone check goes as governance.check.
 */
export class GovernanceChecks {
  private pending: PendingCheck[] = [];
  private scheduled = false;

  constructor(
    private readonly client: BusClient,
    private readonly maxPerRequest = GOVERNANCE_CHECKS_PER_REQUEST,
  ) {}

  /** Resolves when the policy of the intent allows the caller's write of this kind; rejects with its 403 otherwise. */
  assertAllowed(caller: Caller, intentId: string, kind: GovernedWriteKind): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ check: { intent_id: intentId, kind, caller }, resolve, reject });
      if (this.pending.length >= this.maxPerRequest) this.send();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.send());
      }
    });
  }

  private send(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 1) this.sendOne(batch[0]!);
    else if (batch.length > 1) void this.sendMany(batch);
  }

  private sendOne(pending: PendingCheck): void {
    const { caller, intent_id, kind } = pending.check;
    this.client.request(governancePolicyCommands.check, caller, { intent_id, kind }).then(() => pending.resolve(), pending.reject);
  }

  private async sendMany(batch: PendingCheck[]): Promise<void> {
    let verdicts: GovernanceVerdicts;
    try {
      // The request's own caller is this service's first writer: the verdicts use each check's caller.
      verdicts = await this.client.request(governancePolicyCommands.checkMany, batch[0]!.check.caller, { checks: batch.map((p) => p.check) });
    } catch (error) {
      // Refusals carry their policy's details (up to 1,000 allowed_agents each): many in one
      // answer can pass what the bus carries. Each check alone always fits; ask them one by one.
      if (error instanceof AppError && error.code === "REPLY_TOO_LARGE") for (const pending of batch) this.sendOne(pending);
      else for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, i) => {
      const verdict = verdicts.results[i];
      if (verdict && "allowed" in verdict) pending.resolve();
      else if (verdict) pending.reject(AppError.fromWire(verdict.error));
      else pending.reject(appError("INTERNAL_ERROR", "the governance check answered fewer verdicts than it was asked"));
    });
  }
}
