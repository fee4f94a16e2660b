import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/**
 * The request id of the work in progress, kept across every await of that work: the gateway
 * opens it for an HTTP request, the bus carries it in a header, and a service opens it again for
 * the command it serves. Every log line written meanwhile carries it (logger.ts).
 */
const storage = new AsyncLocalStorage<{ requestId: string }>();

/** The NATS header that carries a request id from the gateway to the service. */
export const REQUEST_ID_HEADER = "Im-Request-Id";

/** What a client may send as X-Request-Id: printable, bounded, safe in a log line and a header. */
const ACCEPTED = /^[A-Za-z0-9._:\/+=@-]{1,128}$/;

/** The client's id when it is acceptable, else a new one. */
export const requestIdFrom = (given: string | undefined | null): string => (given && ACCEPTED.test(given) ? given : randomUUID());

/** Runs `work` with `requestId` as the current request id (nothing to open when there is none, or it is not acceptable). */
export function withRequestId<T>(requestId: string | undefined | null, work: () => T): T {
  return requestId && ACCEPTED.test(requestId) ? storage.run({ requestId }, work) : work();
}

export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;
