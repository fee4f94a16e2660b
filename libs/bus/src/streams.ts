import { RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { Bus } from "./connection";

export interface StreamSpec {
  name: string;
  subjects: readonly string[];
}

/** How long JetStream remembers a Nats-Msg-Id to drop a republished duplicate. */
export const DUPLICATE_WINDOW_NS = 2 * 60 * 1_000_000_000;
const MAX_AGE_NS = 7 * 24 * 3600 * 1_000_000_000;

/**
 * Creates the stream, or updates its subjects when it exists. Streams are durable (file storage)
 * and keep events for a week: the event log in Postgres is the record, the stream is the feed.
 */
export async function ensureStream(bus: Bus, canonical: StreamSpec): Promise<void> {
  const { jsm } = bus;
  const spec = { name: bus.streamName(canonical.name), subjects: canonical.subjects.map(bus.subject) };
  const config = {
    name: spec.name,
    subjects: [...spec.subjects],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: DUPLICATE_WINDOW_NS,
    max_age: MAX_AGE_NS,
  };
  try {
    const info = await jsm.streams.info(spec.name);
    const missing = spec.subjects.filter((s) => !info.config.subjects?.includes(s));
    if (missing.length) await jsm.streams.update(spec.name, { ...info.config, subjects: [...(info.config.subjects ?? []), ...missing] });
  } catch (error) {
    if (!String((error as Error).message).includes("not found")) throw error;
    // Replicas racing here is safe: JetStream answers an add of an identical stream with success.
    await jsm.streams.add(config);
  }
}
