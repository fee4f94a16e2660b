import type { Lease } from "@intentmesh/contracts";
import type { Intentmesh } from "../client";
import { IntentmeshError, isApiError } from "../errors";

export interface LeaseOptions {
  /** The scope: `*` (the whole intent) or a state path. */
  scope: string;
  /** Lease length asked for at acquisition and at each renewal (default 60 s). */
  ttlSeconds?: number;
  /** Time between renewals (default a third of the TTL, so two renewals may fail before it runs out). */
  renewEveryMs?: number;
  /** The acting agent (X-Agent-ID), else the client's. */
  agentId?: string;
  /** Called once when the lease is lost, with why. */
  onLost?: (error: LeaseLostError) => void;
}

/** The lease ended without the holder releasing it: renewal was refused, or could not reach the server before the lease ran out. */
export class LeaseLostError extends IntentmeshError {
  override readonly name = "LeaseLostError";
  constructor(readonly lease: Lease, cause: unknown) {
    super(
      cause instanceof IntentmeshError ? cause.code : "NETWORK_ERROR",
      `lease ${lease.id} on ${lease.scope} of intent ${lease.intent_id} is lost: ${cause instanceof Error ? cause.message : String(cause)}`,
      cause instanceof IntentmeshError ? cause.status : 0,
      cause instanceof IntentmeshError ? cause.body : undefined,
      "intentsRenewLease",
      { cause },
    );
  }
}

export interface HeldLease {
  /** The lease as last acquired or renewed. */
  readonly lease: Lease;
  /** Aborts (reason: a LeaseLostError) when the lease is lost; pass it to the work the lease protects. */
  readonly signal: AbortSignal;
  /** Renews now. */
  renew(): Promise<Lease>;
  /** Stops renewing and releases the lease (a lease already lost is only stopped). */
  release(): Promise<void>;
}

/**
 * Acquires a lease and keeps it renewed until released. Renewal is refused for good (the lease
 * expired, was released or handed to a fallback agent, the agent died): the lease is lost at once.
 * Renewal cannot reach the server: it is tried again at the next tick, and the lease counts as
 * lost once its expiry, measured on this machine from the last successful renewal, has passed.
 * Either way `signal` aborts with a LeaseLostError: nothing is written under a lease one no longer holds.
 */
export async function holdLease(client: Intentmesh, intentId: string, options: LeaseOptions): Promise<HeldLease> {
  const ttlSeconds = options.ttlSeconds ?? 60;
  const renewEveryMs = options.renewEveryMs ?? (ttlSeconds * 1000) / 3;
  const call = { agentId: options.agentId };
  // A renewal sets the expiry from the server's now: replaying one after a lost answer is harmless.
  const renewCall = { ...call, replayable: true };
  let lease = await client.ops.intentsAcquireLease({ intent_id: intentId, body: { scope: options.scope, ttl_seconds: ttlSeconds } }, call);
  // Local deadline: the server's clock may differ from ours, so count from our own send time.
  let localExpiry = Date.now() + ttlSeconds * 1000;
  const lost = new AbortController();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const lose = (cause: unknown) => {
    if (lost.signal.aborted) return;
    if (timer) clearTimeout(timer);
    const error = new LeaseLostError(lease, cause);
    lost.abort(error);
    options.onLost?.(error);
  };

  const renew = async (): Promise<Lease> => {
    const sentAt = Date.now();
    lease = await client.ops.intentsRenewLease({ intent_id: intentId, lease_id: lease.id, body: { ttl_seconds: ttlSeconds } }, renewCall);
    localExpiry = sentAt + ttlSeconds * 1000;
    return lease;
  };

  const tick = async () => {
    if (stopped || lost.signal.aborted) return;
    try {
      await renew();
    } catch (error) {
      const refused = isApiError(error) && error.status >= 400 && error.status < 500;
      if (refused || Date.now() >= localExpiry) return lose(error);
    }
    if (!stopped && !lost.signal.aborted) timer = setTimeout(() => void tick(), Math.max(0, Math.min(renewEveryMs, localExpiry - Date.now() - 1)));
  };
  timer = setTimeout(() => void tick(), renewEveryMs);

  return {
    get lease() {
      return lease;
    },
    signal: lost.signal,
    renew: async () => {
      try {
        return await renew();
      } catch (error) {
        if (isApiError(error) && error.status >= 400 && error.status < 500) lose(error);
        throw error;
      }
    },
    release: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (lost.signal.aborted) return;
      lease = await client.ops.intentsReleaseLease({ intent_id: intentId, lease_id: lease.id }, call);
    },
  };
}
