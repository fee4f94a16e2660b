import { canonicalJson, sameCanonicalJson, sha256Tag, type ChainBreak } from "@intentmesh/contracts";

/**
 * The checks of RFC 0019 2.2 over an intent's stored log, one row at a time in sequence order:
 * no sequence missing, each previous_event_hash the stored event_hash of the event before, each
 * event_hash recomputed from the event as it is served (its wire form), and the row's columns
 * telling the same as its wire form. Pure: the rows come from the caller.
 *
 * The link of an event is checked against the *stored* hash of the event before, so one altered
 * event is reported once (its own hash no longer matches), not again at every event after it.
 */
export interface StoredEvent {
  id: string;
  intentId: string;
  sequence: number;
  eventType: string;
  actor: string;
  payload: Record<string, unknown>;
  createdAt: Date;
  traceId: string | null;
  parentEventId: string | null;
  wire: string;
  eventHash: string | null;
  previousEventHash: string | null;
}

/** RFC 0019 1.3: the hash of a served event, from everything but its event_hash. */
export function eventHashOf(served: Record<string, unknown>): string {
  const { event_hash: _ignored, ...content } = served;
  return sha256Tag(canonicalJson(content));
}

export class ChainChecker {
  private expected: number;
  private previous: string | null;
  private afterGap = false;
  checked = 0;

  /** Starts at `sequence`, whose previous_event_hash must be `previousHash` (null at the start of a log). */
  constructor(sequence = 1, previousHash: string | null = null) {
    this.expected = sequence;
    this.previous = previousHash;
  }

  /** The breaks this row shows (none when it is sound); then moves past it. */
  check(row: StoredEvent): ChainBreak[] {
    const breaks: ChainBreak[] = [];
    const at = (reason: ChainBreak["reason"], message: string, expected: string | null = null, found: string | null = null) =>
      breaks.push({ sequence: row.sequence, event_id: row.id, reason, expected, found, message });
    this.checked += 1;
    if (row.sequence !== this.expected) {
      breaks.push({
        sequence: this.expected,
        event_id: null,
        reason: "sequence_gap",
        expected: String(this.expected),
        found: String(row.sequence),
        message: `the log has no event ${this.expected}: the next one stored is ${row.sequence}`,
      });
      this.afterGap = true;
    }
    if (!row.eventHash) {
      at("hash_missing", `event ${row.sequence} has no event_hash`);
    } else {
      if (!this.afterGap && row.previousEventHash !== this.previous) {
        at("previous_hash_mismatch", `event ${row.sequence} does not link to the event before it`, this.previous, row.previousEventHash);
      }
      this.checkContent(row, at);
    }
    this.previous = row.eventHash;
    this.expected = row.sequence + 1;
    this.afterGap = false;
    return breaks;
  }

  /** Nothing stored after the last row, though the intent counts `lastSequence` events. */
  missingAtEnd(lastSequence: number): ChainBreak | null {
    if (lastSequence < this.expected) return null;
    return {
      sequence: this.expected,
      event_id: null,
      reason: "events_missing_at_end",
      expected: String(lastSequence),
      found: String(this.expected - 1),
      message: `the intent has written ${lastSequence} events; the log holds them up to ${this.expected - 1}`,
    };
  }

  private checkContent(row: StoredEvent, at: (reason: ChainBreak["reason"], message: string, expected?: string | null, found?: string | null) => void) {
    let served: Record<string, unknown>;
    try {
      served = JSON.parse(row.wire) as Record<string, unknown>;
    } catch {
      at("row_mismatch", `event ${row.sequence}: its stored form is not JSON`);
      return;
    }
    if (served.event_hash !== row.eventHash || served.previous_event_hash !== row.previousEventHash) {
      at("row_mismatch", `event ${row.sequence}: the hashes it is served with differ from the stored ones`);
    }
    const recomputed = eventHashOf(served);
    if (recomputed !== row.eventHash) {
      at("hash_mismatch", `event ${row.sequence}: its content does not give its event_hash`, row.eventHash, recomputed);
    }
    const differing = differingFields(row, served);
    if (differing.length) at("row_mismatch", `event ${row.sequence}: its stored ${differing.join(", ")} differ from what it is served with`);
  }
}

/** The columns of a row that tell another story than its wire form. */
function differingFields(row: StoredEvent, served: Record<string, unknown>): string[] {
  const differing: string[] = [];
  const same = (a: unknown, b: unknown) => a === b;
  if (!same(served.id, row.id)) differing.push("id");
  if (!same(served.intent_id, row.intentId)) differing.push("intent_id");
  if (!same(served.sequence, row.sequence)) differing.push("sequence");
  if (!same(served.event_type, row.eventType)) differing.push("event_type");
  if (!same(served.actor, row.actor)) differing.push("actor");
  if (typeof served.created_at !== "string" || Date.parse(served.created_at) !== row.createdAt.getTime()) differing.push("created_at");
  if (!same(served.trace_id ?? null, row.traceId)) differing.push("trace_id");
  if (!same(served.parent_event_id ?? null, row.parentEventId)) differing.push("parent_event_id");
  // A payload without a canonical form differs by definition.
  if (!sameCanonicalJson(served.payload, row.payload)) differing.push("payload");
  return differing;
}
