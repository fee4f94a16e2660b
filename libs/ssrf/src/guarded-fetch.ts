import type { AddressPolicy } from "./address-policy";
import { pinnedConnector, type ConnectResponse, type Connector, type ResponseHeaders } from "./connect";
import { pinDestination, type PinnedDestination, type Resolver } from "./destination";
import { failed, OutboundError, timedOut } from "./errors";

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 3;

export interface GuardedFetchOptions extends AddressPolicy {
  /** Name resolution; the system resolver (all addresses) by default. */
  readonly resolve?: Resolver;
  /** The step that opens the connection; node:http(s) to the pinned address by default. */
  readonly connect?: Connector;
  /** One deadline for the whole call, every redirect hop included. */
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** Each hop is checked like the first; 0 refuses every redirect. */
  readonly maxRedirects?: number;
  /** Certificate authorities (PEM) to trust for https instead of the default roots: a private PKI, or a test certificate. */
  readonly ca?: string | readonly string[];
  /** The caller's own cancellation. */
  readonly signal?: AbortSignal;
}

export interface GuardedRequestInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
}

export interface GuardedResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  readonly body: Buffer;
  /** The URL that answered, after redirects. */
  readonly url: string;
  /** The address connected to for the final hop. */
  readonly address: string;
  readonly redirects: number;
  text(): string;
  json(): unknown;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Headers that carry a credential for one origin and must not follow a redirect elsewhere. */
const ORIGIN_BOUND_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "x-api-key"]);

/** Races a step that may ignore the signal (an injected resolver) against the deadline. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => { signal.removeEventListener("abort", onAbort); resolve(value); },
      (error: unknown) => { signal.removeEventListener("abort", onAbort); reject(error); },
    );
  });
}

interface Hop {
  url: string | URL;
  method: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

/** The request for the next hop, following the fetch standard's method rewriting. */
function nextHop(previous: Hop & { url: URL }, response: ConnectResponse): Hop {
  const location = response.headers["location"];
  const target = Array.isArray(location) ? location[0] : location;
  if (target === undefined || target === "") throw failed("bad_redirect", `a ${response.status} redirect came without a Location`);
  let url: URL;
  try {
    url = new URL(target, previous.url);
  } catch {
    throw failed("bad_redirect", "a redirect named an invalid Location");
  }
  const becomesGet =
    (response.status === 303 && previous.method !== "HEAD") ||
    ((response.status === 301 || response.status === 302) && previous.method === "POST");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(previous.headers)) {
    const lower = name.toLowerCase();
    if (url.origin !== previous.url.origin && ORIGIN_BOUND_HEADERS.has(lower)) continue;
    if (becomesGet && (lower === "content-type" || lower === "content-length")) continue;
    headers[name] = value;
  }
  return { url, method: becomesGet ? "GET" : previous.method, headers, body: becomesGet ? undefined : previous.body };
}

function respond(destination: PinnedDestination, response: ConnectResponse, redirects: number): GuardedResponse {
  return {
    status: response.status,
    headers: response.headers,
    body: response.body,
    url: destination.url.href,
    address: destination.address,
    redirects,
    text: () => response.body.toString("utf8"),
    json: () => JSON.parse(response.body.toString("utf8")) as unknown,
  };
}

/**
 * An outbound HTTP call that cannot be pointed inside the network: the URL, every resolved
 * address and every redirect hop are checked, and the connection goes to the address checked.
 * Fails with OutboundError: SSRF_BLOCKED, DISPATCH_TIMEOUT or DISPATCH_FAILED.
 */
export async function guardedFetch(input: string | URL, init: GuardedRequestInit = {}, options: GuardedFetchOptions = {}): Promise<GuardedResponse> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const connect = options.connect ?? pinnedConnector;

  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;

  let hop: Hop = {
    url: input,
    method: (init.method ?? "GET").toUpperCase(),
    headers: { ...init.headers },
    body: init.body,
  };
  try {
    for (let redirects = 0; ; redirects++) {
      const destination = await untilAborted(pinDestination(hop.url, signal, options), signal);
      const response = await untilAborted(
        connect({ destination, method: hop.method, headers: hop.headers, body: hop.body, maxResponseBytes, ca: options.ca, signal }),
        signal,
      );
      if (!REDIRECT_STATUSES.has(response.status)) return respond(destination, response, redirects);
      if (redirects >= maxRedirects) {
        throw failed("too_many_redirects", `more than ${maxRedirects} redirects`);
      }
      hop = nextHop({ ...hop, url: destination.url }, response);
    }
  } catch (error) {
    if (error instanceof OutboundError) throw error;
    if (deadline.aborted) throw timedOut(timeoutMs);
    if (options.signal?.aborted) throw failed("connection_failed", "the caller cancelled the outbound call");
    const detail = error instanceof Error && "code" in error && typeof error.code === "string" ? ` (${error.code})` : "";
    throw failed("connection_failed", `the connection to the destination failed${detail}`);
  }
}
