import { appError, AppError, type WireError } from "@intentmesh/contracts";

/** One verdict of a batched check: allowed (with what the check answers beside), or the error that check alone would have answered. */
export type CheckVerdict<V extends { allowed: true } = { allowed: true }> = V | { error: WireError };

interface Pending<C, V> {
  check: C;
  resolve(verdict: V): void;
  reject(error: unknown): void;
}

/**
 * Checks a service asks of the intents service on behalf of its callers (governance policy,
 * access control), batched by event-loop turn: the checks asked during one turn travel in one
 * `many` request sent at the end of the turn (or as soon as `maxPerRequest` wait), a lone check
 * as `one`. Under load a service starts many writes per turn, and each request costs a bus round
 * trip and a statement in the intents service. No check waits for anything but the rest of its
 * turn, and each is sent after the request that asked it arrived, so a change that has answered
 * binds it (read-your-writes, on every replica: nothing is cached).
 *
 * Refusals carry their details (a governance policy's 1,000 allowed_agents): many in one answer
 * can pass what the bus carries. Each check alone always fits, so a REPLY_TOO_LARGE batch is asked
 * again one by one.
 */
export class TurnBatchedChecks<C, V extends { allowed: true } = { allowed: true }> {
  private pending: Pending<C, V>[] = [];
  private scheduled = false;

  constructor(
    private readonly one: (check: C) => Promise<V>,
    private readonly many: (checks: C[]) => Promise<{ results: CheckVerdict<V>[] }>,
    private readonly maxPerRequest: number,
    /** What the checks are, for the error when an answer is short. */
    private readonly what: string,
  ) {}

  /** Resolves with the check's verdict when it passes; rejects with its refusal otherwise. */
  ask(check: C): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      this.pending.push({ check, resolve, reject });
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

  private sendOne(pending: Pending<C, V>): void {
    this.one(pending.check).then(pending.resolve, pending.reject);
  }

  private async sendMany(batch: Pending<C, V>[]): Promise<void> {
    let verdicts: { results: CheckVerdict<V>[] };
    try {
      verdicts = await this.many(batch.map((p) => p.check));
    } catch (error) {
      if (error instanceof AppError && error.code === "REPLY_TOO_LARGE") for (const pending of batch) this.sendOne(pending);
      else for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, i) => {
      const verdict = verdicts.results[i];
      if (verdict && "allowed" in verdict) pending.resolve(verdict);
      else if (verdict) pending.reject(AppError.fromWire(verdict.error));
      else pending.reject(appError("INTERNAL_ERROR", `the ${this.what} answered fewer verdicts than it was asked`));
    });
  }
}
