/**
 * The scale benchmark's correctness check (docs/benchmarks.md, "Scale benchmark"): every write a
 * gateway acknowledged (a 2xx answer) is in the database exactly once and in its JetStream stream
 * exactly once. The load driver records one key per acknowledged write; afterwards the keys are
 * looked up in the service's table and in the stream, and each key must be seen once in each.
 *
 * A row or message whose key was never acknowledged is not a fault (a client may have given up
 * before the answer came), so only acknowledged keys are counted.
 */
import type pg from "pg";
import type { JsMsg } from "@nats-io/jetstream";
import type { Bus } from "@intentmesh/bus";
import { channelStream, memoryStream, streams, type IntentEvent } from "@intentmesh/contracts";
import { readStream } from "../../test/support/service-process";

export const WRITE_SCENARIOS = ["create_intent", "append_event", "state_patch", "post_message", "memory_write"] as const;
export type WriteScenario = (typeof WRITE_SCENARIOS)[number];

export interface ExactlyOnceReport {
  scenario: string;
  /** Distinct acknowledged keys. */
  acknowledged: number;
  missingInDatabase: string[];
  /** "<key> xN" for keys stored more than once. */
  duplicatedInDatabase: string[];
  missingInStream: string[];
  duplicatedInStream: string[];
  ok: boolean;
}

/**
 * The comparison itself: `stored` and `published` list the key of every row and message found
 * (a key twice when found twice). The same key acknowledged twice counts once: the check is about
 * what was written, not how often a client was told.
 */
export function checkExactlyOnce(scenario: string, acknowledged: readonly string[], stored: readonly string[], published: readonly string[]): ExactlyOnceReport {
  const wanted = new Set(acknowledged);
  const count = (keys: readonly string[]) => {
    const copies = new Map<string, number>();
    for (const key of keys) if (wanted.has(key)) copies.set(key, (copies.get(key) ?? 0) + 1);
    return copies;
  };
  const inDatabase = count(stored);
  const inStream = count(published);
  const missing = (copies: Map<string, number>) => [...wanted].filter((key) => !copies.has(key));
  const duplicated = (copies: Map<string, number>) => [...copies].filter(([, n]) => n > 1).map(([key, n]) => `${key} x${n}`);
  const report = {
    scenario,
    acknowledged: wanted.size,
    missingInDatabase: missing(inDatabase),
    duplicatedInDatabase: duplicated(inDatabase),
    missingInStream: missing(inStream),
    duplicatedInStream: duplicated(inStream),
  };
  const ok = !report.missingInDatabase.length && !report.duplicatedInDatabase.length && !report.missingInStream.length && !report.duplicatedInStream.length;
  return { ...report, ok };
}

/** One line per scenario, and under a failing one the first keys of each kind of fault. */
export function formatReports(reports: readonly ExactlyOnceReport[], shown = 5): string {
  const lines: string[] = [];
  for (const r of reports) {
    const faults: [string, string[]][] = [
      ["acknowledged but not in the database", r.missingInDatabase],
      ["in the database more than once", r.duplicatedInDatabase],
      ["acknowledged but not in the stream", r.missingInStream],
      ["in the stream more than once", r.duplicatedInStream],
    ];
    lines.push(`${r.ok ? "ok  " : "FAIL"} ${r.scenario}: ${r.acknowledged} acknowledged writes` + (r.ok ? ", each once in the database and once in the stream" : ""));
    for (const [what, keys] of faults) {
      if (keys.length) lines.push(`       ${keys.length} ${what}: ${keys.slice(0, shown).join(", ")}${keys.length > shown ? ", ..." : ""}`);
    }
  }
  return lines.join("\n");
}

/**
 * Where each write scenario's acknowledged key is stored and published. `rows` selects the key of
 * each stored copy among the given keys ($1, text[]); `key` reads it off a stream message
 * (undefined: a message of another kind).
 */
interface WriteSource {
  rows: string;
  /** The parameter of `rows` made from the acknowledged keys. */
  param(keys: readonly string[]): string[];
  stream: string;
  key(msg: JsMsg): string | undefined;
}

const intentEvent = (msg: JsMsg) => msg.json<IntentEvent>();
const same = (keys: readonly string[]) => [...keys];

export const WRITE_SOURCES: Record<WriteScenario, WriteSource> = {
  // The created intent's id; its intent_created event is the write's record and its message.
  create_intent: {
    rows: "select intent_id::text as key from intents.events where event_type = 'intent_created' and intent_id = any($1::uuid[])",
    param: same,
    stream: streams.intents.name,
    key: (msg) => {
      const event = intentEvent(msg);
      return event.event_type === "intent_created" ? event.intent_id : undefined;
    },
  },
  // The appended event's id.
  append_event: {
    rows: "select id::text as key from intents.events where id = any($1::uuid[])",
    param: same,
    stream: streams.intents.name,
    key: (msg) => intentEvent(msg).id,
  },
  // "<intent id>:v<version>" of the answer: the state_patched event that made that version.
  state_patch: {
    rows: "select intent_id::text || ':v' || (payload->>'version') as key from intents.events where event_type = 'state_patched' and intent_id = any($1::uuid[])",
    param: (keys) => [...new Set(keys.map((key) => key.split(":v")[0]!))],
    stream: streams.intents.name,
    key: (msg) => {
      const event = intentEvent(msg);
      return event.event_type === "state_patched" ? `${event.intent_id}:v${(event.payload as { version?: number }).version}` : undefined;
    },
  },
  // The message's id; the channel's stream carries each message (channel_message).
  post_message: {
    rows: "select id::text as key from channels.messages where id = any($1::uuid[])",
    param: same,
    stream: channelStream.name,
    key: (msg) => (msg.subject.endsWith(".channel_message") ? msg.json<{ id: string }>().id : undefined),
  },
  // The entry's id; an entry without an intent is announced on IM_MEMORY (memory.created).
  memory_write: {
    rows: "select id::text as key from memory.entries where id = any($1::uuid[])",
    param: same,
    stream: memoryStream.name,
    key: (msg) => {
      const event = msg.json<{ event_type?: string; payload?: { data?: { entry_id?: string } } }>();
      return event.event_type === "memory.created" ? event.payload?.data?.entry_id : undefined;
    },
  },
};

/**
 * Looks every scenario's acknowledged keys up in the database and in the streams (each stream
 * read once, from its first message) and compares. Call it once the outbox relays are drained.
 */
export async function verifyWrites(db: pg.Client | pg.Pool, bus: Bus, acknowledged: Partial<Record<WriteScenario, readonly string[]>>): Promise<ExactlyOnceReport[]> {
  const messages = new Map<string, Promise<JsMsg[]>>();
  const streamOf = (canonical: string) => {
    let read = messages.get(canonical);
    if (!read) {
      read = readStream(bus, bus.streamName(canonical), (msg) => msg);
      messages.set(canonical, read);
    }
    return read;
  };
  const reports: ExactlyOnceReport[] = [];
  for (const scenario of WRITE_SCENARIOS) {
    const keys = acknowledged[scenario];
    if (!keys) continue;
    const source = WRITE_SOURCES[scenario];
    const stored = keys.length ? (await db.query<{ key: string }>(source.rows, [source.param(keys)])).rows.map((row) => row.key) : [];
    const published: string[] = [];
    for (const msg of await streamOf(source.stream)) {
      const key = source.key(msg);
      if (key !== undefined) published.push(key);
    }
    reports.push(checkExactlyOnce(scenario, keys, stored, published));
  }
  return reports;
}
