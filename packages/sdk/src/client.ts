import { routes } from "./generated/routes";
import type { RouteSpec } from "./route-spec";
import { IntentmeshError, OutcomeUnknownError, abortError, type ErrorBody } from "./errors";
import { replaySafety } from "./replay";
import { openInboxStream, openStream, type StreamKind, type StreamOptions, type StreamMessage } from "./sse";
import type { InboxHint } from "@intentmesh/contracts";
import type { ApiResult, CallOptions, OperationId, Operations, RequestOf, ResponseOf } from "./types";

export interface RetryPolicy {
  /** Attempts in all, the first included (default 4). */
  attempts?: number;
  /** First backoff (default 200 ms), doubled per attempt with jitter, capped by maxDelayMs. */
  baseDelayMs?: number;
  /** Longest wait between attempts, also the cap of a Retry-After (default 5000 ms). */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8080` (the API prefix /api/v1 is added). */
  baseUrl: string;
  /** The X-API-Key. */
  apiKey?: string;
  /** The acting agent (X-Agent-ID) of every call, unless a call names another. */
  agentId?: string;
  /** A fetch of your own (a proxy's, a test's); the global fetch otherwise. */
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  /** Per-attempt timeout in milliseconds (default 30000; 0: none). */
  timeoutMs?: number;
  /** Headers added to every request (tracing, for example). */
  headers?: Record<string, string>;
}

/** The client: one typed method per operation of the catalogue, the generic call, and streams. */
export interface Intentmesh {
  /** One method per operationId of the route catalogue, e.g. `ops.intentsGet({ intent_id })`. */
  readonly ops: Operations;
  /** Calls an operation by its id; resolves to the success body. */
  call<Id extends OperationId>(operationId: Id, request: RequestOf<Id>, options?: CallOptions): Promise<ResponseOf<Id>>;
  /** Like `call`, with the status, the ETag's version and the headers. */
  send<Id extends OperationId>(operationId: Id, request: RequestOf<Id>, options?: CallOptions): Promise<ApiResult<Id>>;
  /** A live stream of an intent's, portfolio's, agent's or channel's events (see sse.ts). */
  subscribe<K extends StreamKind>(kind: K, id: string, options?: StreamOptions): AsyncIterableIterator<StreamMessage<K>>;
  /** The operators' inbox hints (GET /subscribe/inbox): read the inbox again in `onConnect` and after each hint. */
  subscribeInbox(options?: Omit<StreamOptions, "from" | "agentId">): AsyncIterableIterator<InboxHint>;
  /** The same client acting as another agent (X-Agent-ID). */
  as(agentId: string): Intentmesh;
  readonly options: Readonly<ClientOptions>;
}

const API_PREFIX = "/api/v1";
const DEFAULTS = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5000, timeoutMs: 30_000 };

/** Builds a client. The core needs only fetch, so it runs in Node 20+, Deno, Bun and browsers. */
export function createClient(options: ClientOptions): Intentmesh {
  const base = options.baseUrl.replace(/\/+$/, "");
  const retry = { ...DEFAULTS, ...options.retry };
  const fetchImpl = options.fetch ?? ((...args: Parameters<typeof fetch>) => globalThis.fetch(...args));

  const headersFor = (callOptions: CallOptions | undefined): Record<string, string> => {
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (options.apiKey) headers["X-API-Key"] = options.apiKey;
    const agentId = callOptions?.agentId ?? options.agentId;
    if (agentId) headers["X-Agent-ID"] = agentId;
    return headers;
  };

  async function send<Id extends OperationId>(operationId: Id, request: RequestOf<Id>, callOptions: CallOptions = {}): Promise<ApiResult<Id>> {
    const route: RouteSpec | undefined = (routes as Record<string, RouteSpec>)[operationId];
    if (!route) throw new TypeError(`unknown operation ${operationId}`);
    const req = (request ?? {}) as Record<string, unknown>;
    const headers = headersFor(callOptions);
    const url = `${base}${API_PREFIX}${fillPath(route, req)}${queryString(route, req)}`;
    let body: string | undefined;
    if (route.body) {
      const payload = liftIntoBody(route, req);
      if (payload !== undefined) {
        body = JSON.stringify(payload);
        headers["Content-Type"] = "application/json";
      }
    }
    const ifMatch = req.ifMatch;
    if (route.ifMatch && ifMatch !== undefined && ifMatch !== null) headers["If-Match"] = String(ifMatch);
    for (const [field, header] of Object.entries(route.headers ?? {})) {
      const value = req[field];
      if (value !== undefined && value !== null) headers[header] = String(value);
    }
    let safety = replaySafety(route, headers["If-Match"] !== undefined);
    if (safety === "keyed" && route.headers) {
      const header = route.headers.idempotency_key!;
      // One key for every attempt of this call: the server answers a replay with the first outcome.
      headers[header] ??= randomKey();
    }
    if (safety === "unsafe" && callOptions.replayable) safety = "idempotent";

    let ambiguous: unknown = undefined;
    for (let attempt = 1; ; attempt += 1) {
      const last = attempt >= retry.attempts;
      let res: Response;
      try {
        res = await fetchWithTimeout(fetchImpl, url, { method: route.method, headers, body }, callOptions.timeoutMs ?? options.timeoutMs ?? retry.timeoutMs, callOptions.signal);
      } catch (error) {
        if (callOptions.signal?.aborted) throw abortError(callOptions.signal);
        const neverSent = isNeverSent(error);
        if (!neverSent) {
          // The request may have reached the server.
          if (safety === "unsafe") throw new OutcomeUnknownError(operationId, error);
          if (safety !== "read") ambiguous ??= error;
        }
        if (last) {
          if (ambiguous !== undefined) throw new OutcomeUnknownError(operationId, error);
          throw networkError(operationId, error);
        }
        await sleep(backoff(retry, attempt), callOptions.signal);
        continue;
      }
      if (res.ok) return { data: (await readJson(res, operationId)) as ResponseOf<Id>, status: res.status, version: versionOf(res.headers.get("etag")), headers: res.headers };

      const failure = await errorOf(res, operationId);
      // A keyed write answered 409 with Retry-After (DISPATCH_IN_PROGRESS) is still being applied
      // under the same key: the same request, sent again later, gets its outcome.
      const settling = res.status === 409 && safety === "keyed" && res.headers.get("retry-after") !== null;
      const transient = res.status === 502 || res.status === 503 || res.status === 504 || settling;
      if (transient) {
        // 504: the gateway stopped waiting, the service may still have committed.
        if (safety === "unsafe") throw res.status === 504 ? new OutcomeUnknownError(operationId, failure) : failure;
        if (res.status === 504 && safety !== "read") ambiguous ??= failure;
        if (!last) {
          await sleep(Math.max(backoff(retry, attempt), Math.min(retryAfterMs(res.headers.get("retry-after")), retry.maxDelayMs)), callOptions.signal);
          continue;
        }
        if (ambiguous !== undefined) throw new OutcomeUnknownError(operationId, ambiguous, failure);
        throw failure;
      }
      if (ambiguous !== undefined && res.status >= 400 && res.status < 500) throw new OutcomeUnknownError(operationId, ambiguous, failure);
      throw failure;
    }
  }

  const call = async <Id extends OperationId>(operationId: Id, request: RequestOf<Id>, callOptions?: CallOptions) => (await send(operationId, request, callOptions)).data;

  const ops = {} as Record<string, (request?: unknown, callOptions?: CallOptions) => Promise<unknown>>;
  for (const operationId of Object.keys(routes)) {
    ops[operationId] = (request?: unknown, callOptions?: CallOptions) => call(operationId as OperationId, (request ?? {}) as never, callOptions);
  }

  const client: Intentmesh = {
    ops: ops as unknown as Operations,
    call,
    send,
    subscribe: (kind, id, streamOptions) =>
      openStream(kind, id, {
        ...streamOptions,
        client,
        url: `${base}${API_PREFIX}`,
        headers: () => headersFor({ agentId: streamOptions?.agentId }),
        fetch: fetchImpl,
      }),
    subscribeInbox: (streamOptions) =>
      openInboxStream({ ...streamOptions, client, url: `${base}${API_PREFIX}`, headers: () => headersFor(undefined), fetch: fetchImpl }),
    as: (agentId) => createClient({ ...options, agentId }),
    options: Object.freeze({ ...options }),
  };
  return client;
}

function fillPath(route: RouteSpec, request: Record<string, unknown>): string {
  return route.path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const value = request[name];
    if (value === undefined || value === null || value === "") throw new TypeError(`${route.method} ${route.path}: the path parameter ${name} is missing`);
    return encodeURIComponent(String(value));
  });
}

function queryString(route: RouteSpec, request: Record<string, unknown>): string {
  if (!route.query || !request.query) return "";
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    params.append(name, Array.isArray(value) ? value.join(",") : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

function liftIntoBody(route: RouteSpec, request: Record<string, unknown>): unknown {
  const body = request.body;
  if (!route.liftFromBody?.length) return body;
  const lifted = Object.fromEntries(route.liftFromBody.filter((field) => request[field] !== undefined).map((field) => [field, request[field]]));
  return { ...(body as Record<string, unknown> | undefined), ...lifted };
}

async function fetchWithTimeout(fetchImpl: typeof fetch, url: string, init: RequestInit, timeoutMs: number, signal: AbortSignal | undefined): Promise<Response> {
  if (signal?.aborted) throw abortError(signal);
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  let timedOut = false;
  const timer = timeoutMs > 0 ? setTimeout(() => ((timedOut = true), controller.abort()), timeoutMs) : undefined;
  try {
    const res = await fetchImpl(url, { ...init, signal: controller.signal });
    // The body is read inside the same deadline.
    const text = await res.text();
    return new Response(text === "" || res.status === 204 ? null : text, { status: res.status, statusText: res.statusText, headers: res.headers });
  } catch (error) {
    if (timedOut) throw new IntentmeshError("TIMEOUT", `no answer from ${url} within ${timeoutMs} ms`, 0, undefined, undefined, { cause: error });
    throw error;
  } finally {
    if (timer) clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Connection refused or a name that does not resolve: the request never left, whatever the method. */
function isNeverSent(error: unknown): boolean {
  const code = String((error as { cause?: { code?: unknown } })?.cause?.code ?? (error as { code?: unknown })?.code ?? "");
  return ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"].includes(code);
}

function networkError(operationId: string, error: unknown): IntentmeshError {
  if (error instanceof IntentmeshError) return error;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return new IntentmeshError("NETWORK_ERROR", `${operationId}: ${cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error)}`, 0, undefined, operationId, { cause: error });
}

async function readJson(res: Response, operationId: string): Promise<unknown> {
  const text = await res.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new IntentmeshError("INVALID_RESPONSE", `${operationId}: the server answered ${res.status} with a body that is not JSON`, res.status, undefined, operationId, { cause: error });
  }
}

async function errorOf(res: Response, operationId: string): Promise<IntentmeshError> {
  const text = await res.text();
  let body: ErrorBody | undefined;
  try {
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (parsed && typeof parsed === "object" && typeof (parsed as ErrorBody).code === "string") body = parsed as ErrorBody;
  } catch {
    /* not JSON: a proxy's page */
  }
  if (!body) return new IntentmeshError("INVALID_RESPONSE", `${operationId}: the server answered ${res.status} without an error body`, res.status, undefined, operationId);
  return new IntentmeshError(body.code as IntentmeshError["code"], body.message, res.status, body, operationId);
}

/** `"7"`, `W/"7"` or `7` -> 7. */
export function versionOf(etag: string | null): number | null {
  if (!etag) return null;
  const match = /(\d+)/.exec(etag);
  return match ? Number(match[1]) : null;
}

function backoff(retry: Required<RetryPolicy>, attempt: number): number {
  const exponential = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return exponential / 2 + Math.random() * (exponential / 2);
}

function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

/** Resolves after `ms`, or rejects at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A random UUID (crypto.randomUUID exists only in secure browser contexts; getRandomValues everywhere). */
export function randomKey(): string {
  if (typeof globalThis.crypto?.randomUUID === "function") return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
