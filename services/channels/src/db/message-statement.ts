import { randomUUID } from "node:crypto";
import { channelMessageSubject, isoTimestamp, SCHEMA_HEADER, SYSTEM_EVENT_SCHEMA, systemEventMsgId, systemEventSubject, systemEvents, type Message, type MessageType } from "@intentmesh/contracts";
import { newSystemEvent, traceCarrier } from "@intentmesh/bus";
import { rowsOf, withParams, type DatabaseHandle, type Tx } from "@intentmesh/db";

/**
 * A message as ONE statement: it takes the channel's next sequence (the UPDATE locks the channel
 * row, so sequences have no gaps and a closure is seen), inserts the message as delivered
 * (rule 1), evicts what passes max_messages (spec 8), and writes the outbox row of the channel's
 * stream and, on an audit channel, the channel_message system event (rule 12). Nothing is written
 * when the channel is not open, or (given a revision) no longer at the revision the send's checks
 * saw. One round trip instead of a transaction of six.
 *
 * The message's JSON is built here once, with the sequence spliced in by the statement (the only
 * field PostgreSQL decides): `$prefix || sequence || $suffix`.
 */
const SEND_SQL = `
with c as (
  update channels.channels set
    message_count = message_count + 1,
    last_message_at = $3::timestamptz,
    closes_at = case when ttl_seconds is null then null else $3::timestamptz + ttl_seconds * interval '1 second' end
  where id = $1::uuid and status = 'open' and ($20::int is null or revision = $20::int)
  returning id, message_count as seq, max_messages, audit),
m as (
  insert into channels.messages (id, channel_id, intent_id, sequence, sender, "to", message_type, correlation_id, payload, metadata, status, created_at, expires_at)
  select $2::uuid, c.id, $4::uuid, c.seq, $5::text, $6::text, $7::text, $8::uuid, $9::jsonb, $10::jsonb, 'delivered', $3::timestamptz, $11::timestamptz from c
  returning sequence),
e as (
  delete from channels.messages x using c
  where x.channel_id = c.id and x.sequence <= c.seq - c.max_messages),
o as (
  insert into channels.outbox (subject, msg_id, payload, headers)
  select $12::text, 'channel:' || $1::text || ':m' || c.seq, $13::text || c.seq || $14::text, $15::jsonb from c
  union all
  select $16::text, $17::text, $18::text, $19::jsonb from c where c.audit)
select (select seq from c) as sequence`;

export interface OutgoingMessage {
  channelId: string;
  channelName: string;
  intentId: string;
  sender: string;
  to: string | null;
  type: MessageType;
  correlationId: string | null;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  expiresAt: Date | null;
}

const SEQUENCE_MARK = -987654321;

function prepare(out: OutgoingMessage, now: Date, revision: number | null) {
  const id = randomUUID();
  const message: Message & { event_type: string } = {
    id,
    channel_id: out.channelId,
    intent_id: out.intentId,
    sequence: SEQUENCE_MARK,
    sender: out.sender,
    to: out.to,
    message_type: out.type,
    correlation_id: out.correlationId,
    payload: out.payload,
    metadata: out.metadata,
    status: "delivered",
    created_at: isoTimestamp(now),
    expires_at: out.expiresAt ? isoTimestamp(out.expiresAt) : null,
    read_at: null,
    event_type: systemEvents.channelMessage.name,
  };
  const [prefix, suffix] = JSON.stringify(message).split(String(SEQUENCE_MARK)) as [string, string];
  const traceId = typeof out.metadata.trace_id === "string" && /^[^\s]{1,200}$/.test(out.metadata.trace_id) ? out.metadata.trace_id : null;
  const audit = newSystemEvent(systemEvents.channelMessage, {
    id,
    source: "channels",
    intentId: out.intentId,
    actor: out.sender,
    payload: { channel_id: out.channelId, channel_name: out.channelName, message_id: id, message_type: out.type, to: out.to, payload: out.payload },
    traceId,
    at: now,
  });
  const trace = traceCarrier();
  const params = [
    out.channelId,
    id,
    now,
    out.intentId,
    out.sender,
    out.to,
    out.type,
    out.correlationId,
    JSON.stringify(out.payload),
    JSON.stringify(out.metadata),
    out.expiresAt,
    channelMessageSubject(out.channelId),
    prefix,
    suffix,
    JSON.stringify(trace),
    systemEventSubject(out.intentId, systemEvents.channelMessage.name),
    systemEventMsgId("channels", id),
    JSON.stringify(audit),
    JSON.stringify({ ...trace, [SCHEMA_HEADER]: SYSTEM_EVENT_SCHEMA }),
    revision,
  ];
  return { message, params };
}

type Row = { sequence: string | number | null };

/** The written message, or null when the channel is not open (nothing was written). */
function result(row: Row | undefined, message: Message): Message | null {
  if (!row || row.sequence === null) return null;
  return { ...message, sequence: Number(row.sequence) };
}

/**
 * A message from a request: the statement alone, as a named prepared statement; with `revision`,
 * only while the channel is at it (null: whatever its revision).
 */
export async function writeMessage(query: DatabaseHandle["query"], out: OutgoingMessage, now: Date, revision: number | null = null): Promise<Message | null> {
  const { message, params } = prepare(out, now, revision);
  return clean(result((await query<Row>("channels_send", SEND_SQL, params))[0], message));
}

/** The same inside a caller's transaction (a departure notice with the member list change). */
export async function writeMessageInTx(tx: Tx, out: OutgoingMessage, now: Date): Promise<Message | null> {
  const { message, params } = prepare(out, now, null);
  return clean(result(rowsOf<Row>(await tx.execute(withParams(SEND_SQL, params)))[0], message));
}

function clean(message: Message | null): Message | null {
  if (!message) return null;
  const { event_type: _e, ...rest } = message as Message & { event_type?: unknown };
  return rest as Message;
}
