import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { StartupError, redactUrl } from "@intentmesh/telemetry";

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The subject root in force: `im` in production; tests and side-by-side clusters pick their own. */
  namespace: string;
  /** Maps a catalogue subject (`im.…`) into this bus's namespace. */
  subject(canonical: string): string;
  /** Maps a catalogue stream name (`IM_…`) into this bus's namespace. */
  streamName(canonical: string): string;
  close(): Promise<void>;
  /**
   * TEST-ONLY, off unless a test harness turns them on for its bus: the commands served on this
   * connection hold every answer to their command's `output` and every error code to its
   * `errors` (libs/bus rpc.ts), so a handler that drifts from its catalogue entry fails its test.
   */
  checks: CommandChecks;
}

export interface CommandChecks {
  outputs: boolean;
  errors: boolean;
}

export const DEFAULT_NAMESPACE = "im";

/** NATS credentials (NATS_USER and NATS_PASSWORD, or NATS_TOKEN); none when the server asks for none. */
export interface NatsAuth {
  user?: string;
  pass?: string;
  token?: string;
}

/** How long the first connection to NATS may take. */
const CONNECT_TIMEOUT_MS = 3000;

/**
 * Connects to NATS with JetStream. Reconnects forever: a NATS restart pauses the service, it
 * does not end it. The connection name shows up in NATS monitoring.
 */
export async function connectBus(url: string, name: string, namespace = DEFAULT_NAMESPACE, auth: NatsAuth = {}): Promise<Bus> {
  if (!/^[a-z][a-z0-9_-]{0,30}$/.test(namespace)) throw new Error(`BUS_NAMESPACE ${namespace} must be lowercase letters, digits, _ or -`);
  // noAsyncTraces: the client would otherwise build an Error (a stack capture) for every request
  // and publish, which costs more than the request itself; our errors carry the subject instead.
  // The first connect gives up after a few seconds (a port that is not NATS never answers its
  // handshake); once connected, the client reconnects forever.
  const credentials = { ...(auth.user ? { user: auth.user, pass: auth.pass } : {}), ...(auth.token ? { token: auth.token } : {}) };
  const nc = await connect({ servers: url.split(","), name, timeout: CONNECT_TIMEOUT_MS, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true, ...credentials }).catch(
    (error: unknown) => {
      const reason = (error as Error)?.name === "TimeoutError" ? "no NATS handshake in time: is it a NATS port?" : String((error as Error)?.message ?? error);
      throw new StartupError("NATS_URL", `NATS at ${redactUrl(url)} cannot be reached (${reason}): start nats-server -js, or set NATS_URL to a running server`);
    },
  );
  const jsm = await jetstreamManager(nc).catch(async (error: unknown) => {
    await nc.close().catch(() => undefined);
    throw new StartupError(
      "NATS_URL",
      `the NATS server at ${redactUrl(url)} does not offer JetStream (${String((error as Error)?.message ?? error).slice(0, 120)}): start it with -js (JetStream enabled)`,
    );
  });
  const js = jetstream(nc);
  return {
    nc,
    js,
    jsm,
    namespace,
    subject: (canonical) => (namespace === DEFAULT_NAMESPACE ? canonical : canonical.replace(/^im\./, `${namespace}.`)),
    streamName: (canonical) =>
      namespace === DEFAULT_NAMESPACE ? canonical : canonical.replace(/^IM_/, `${namespace.toUpperCase().replace(/-/g, "_")}_`),
    close: async () => {
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
    },
    checks: { outputs: false, errors: false },
  };
}

/** Tells whether something answers NATS at url, without keeping a connection. */
export async function natsReachable(url: string, timeoutMs = 1500): Promise<boolean> {
  try {
    const nc = await connect({ servers: url.split(","), timeout: timeoutMs, maxReconnectAttempts: 0, reconnect: false });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}
