import { createClient, IntentmeshError, type Intentmesh, type OperationId } from "@intentmesh/sdk";

/**
 * The operator's key lives in sessionStorage only: gone when the tab closes, never in a URL
 * (the console routes by fragment and puts no key there), never logged. Every API call goes
 * through the SDK with it as X-API-Key.
 */
const STORAGE_KEY = "intentmesh.console.key";

export interface Session {
  principal: string;
  roles: string[];
  /** The operations the key's roles admit, as the server's route catalogue says (GET /console/session). */
  operations: ReadonlySet<OperationId>;
  client: Intentmesh;
}

/** Whether the key's roles admit an operation: the console shows an action only then (the server still decides). */
export const may = (session: Session, operation: OperationId) => session.operations.has(operation);

export function clientFor(key: string): Intentmesh {
  // Few retries: a console shows the server being down at once and recovers by itself.
  return createClient({ baseUrl: location.origin, apiKey: key, retry: { attempts: 2, maxDelayMs: 1000 }, timeoutMs: 15_000 });
}

/**
 * Who the key is and what its roles admit: GET /console/session (served by the gateway beside the
 * console's files; the API has no operation that answers it). 401 for a wrong key.
 */
export async function signIn(key: string): Promise<Session> {
  let res: Response;
  try {
    res = await fetch("/console/session", { headers: { "X-API-Key": key }, cache: "no-store" });
  } catch (error) {
    throw new IntentmeshError("NETWORK_ERROR", "the server does not answer", 0, undefined, undefined, { cause: error });
  }
  const body = (await res.json().catch(() => ({}))) as { principal?: string; roles?: string[]; operations?: OperationId[]; message?: string; code?: string };
  if (!res.ok) throw new IntentmeshError((body.code ?? "UNAUTHORIZED") as "UNAUTHORIZED", body.message ?? `the server answered ${res.status}`, res.status);
  sessionStorage.setItem(STORAGE_KEY, key);
  return { principal: body.principal!, roles: body.roles ?? [], operations: new Set(body.operations ?? []), client: clientFor(key) };
}

export function storedKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** A sentence for an error, never the key or a header. */
export function describe(error: unknown): string {
  if (error instanceof IntentmeshError) return error.status === 0 ? "The server does not answer." : `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

/** The server is down (no answer, or a gateway/bus outage) rather than refusing this request. */
export const isOutage = (error: unknown) => error instanceof IntentmeshError && (error.status === 0 || error.status === 502 || error.status === 503 || error.status === 504);
