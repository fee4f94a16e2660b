import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  close(): Promise<void>;
}

/**
 * Connects to NATS with JetStream. Reconnects forever: a NATS restart pauses the service, it
 * does not end it. The connection name shows up in NATS monitoring.
 */
export async function connectBus(url: string, name: string): Promise<Bus> {
  const nc = await connect({ servers: url.split(","), name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  return {
    nc,
    js,
    jsm,
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
