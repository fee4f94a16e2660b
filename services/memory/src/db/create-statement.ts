import { outboxRowOf, type OutboxMessage } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { EntryRow } from "../mapping";

/**
 * A create that needs no check in a transaction (not createNeedsChecks, handlers/entries.ts) as ONE
 * statement: the entry, and its memory.created outbox row only when the entry was inserted. One
 * round trip, no transaction to open and close, planned once per connection. A conflict on the
 * uniqueness of 2.14 inserts nothing and answers `inserted = 0`.
 */
const CREATE_SQL = `
with e as (
  insert into memory.entries (id, agent_id, namespace, key, value, value_bytes, memory_type, task_id, intent_id, tags, ttl, version,
                              created_at, updated_at, last_used_at, expires_at, pinned, priority, curated_by, sensitivity)
  values ($1::uuid, $2::text, $3::text, $4::text, $5::jsonb, $6::int, $7::text, $8::uuid, $9::uuid, $10::text[], $11::text, $12::int,
          $13::timestamptz, $14::timestamptz, $15::timestamptz, $16::timestamptz, $17::boolean, $18::smallint, $19::text, $20::text)
  on conflict do nothing
  returning id),
o as (
  insert into memory.outbox (subject, msg_id, payload, headers)
  select $21::text, $22::text, $23::text, $24::jsonb from e)
select count(*)::int as inserted from e`;

/** Inserts the entry and its event; false when an entry with its key already exists (nothing written). */
export async function createInOneStatement(query: DatabaseHandle["query"], row: EntryRow, event: OutboxMessage): Promise<boolean> {
  const out = outboxRowOf(event);
  const params = [
    row.id,
    row.agentId,
    row.namespace,
    row.key,
    JSON.stringify(row.value),
    row.valueBytes,
    row.memoryType,
    row.taskId,
    row.intentId,
    row.tags,
    row.ttl,
    row.version,
    row.createdAt,
    row.updatedAt,
    row.lastUsedAt,
    row.expiresAt,
    row.pinned,
    row.priority,
    row.curatedBy,
    row.sensitivity,
    out.subject,
    out.msgId,
    out.payload,
    JSON.stringify(out.headers),
  ];
  const [result] = await query<{ inserted: number }>("memory_create", CREATE_SQL, params);
  return result?.inserted === 1;
}
