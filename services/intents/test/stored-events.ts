import { sql } from "drizzle-orm";
import { rowsOf, type DatabaseHandle } from "@intentmesh/db";
import type { StoredEvent } from "../src/verifiable/chain";

/** An intent's event rows as stored, in sequence order, in the shape the chain checker reads: for the chain tests. */
export async function storedEvents(handle: DatabaseHandle, intentId: string): Promise<StoredEvent[]> {
  return rowsOf<Record<string, any>>(await handle.db.execute(sql`select * from intents.events where intent_id = ${intentId} order by sequence`)).map(
    (r): StoredEvent => ({
      id: r.id,
      intentId: r.intent_id,
      sequence: Number(r.sequence),
      eventType: r.event_type,
      actor: r.actor,
      payload: r.payload,
      createdAt: new Date(r.created_at),
      traceId: r.trace_id,
      parentEventId: r.parent_event_id,
      wire: r.wire,
      eventHash: r.event_hash,
      previousEventHash: r.previous_event_hash,
    }),
  );
}
