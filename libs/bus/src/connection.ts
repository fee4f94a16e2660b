import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";

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
}

export const DEFAULT_NAMESPACE = "im";

/**
 * Connects to NATS with JetStream. Reconnects forever: a NATS restart pauses the service, it
 * does not end it. The connection name shows up in NATS monitoring.
 */
export async function connectBus(url: string, name: string, namespace = DEFAULT_NAMESPACE): Promise<Bus> {
  if (!/^[a-z][a-z0-9_-]{0,30}$/.test(namespace)) throw new Error(`BUS_NAMESPACE ${namespace} must be lowercase letters, digits, _ or -`);
  // noAsyncTraces: the client would otherwise build an Error (a stack capture) for every request
  // and publish, which costs more than the request itself; our errors carry the subject instead.
  const nc = await connect({ servers: url.split(","), name, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
  const jsm = await jetstreamManager(nc);
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
