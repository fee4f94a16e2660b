import { describe, expect, it } from "vitest";
import { ChainChecker, eventHashOf, type StoredEvent } from "./chain";

const intentId = "11111111-1111-4111-8111-111111111111";

/** A log of `n` events chained as the database chains them (wire form + previous_event_hash). */
function log(n: number): StoredEvent[] {
  const rows: StoredEvent[] = [];
  let previous: string | null = null;
  for (let sequence = 1; sequence <= n; sequence++) {
    const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, sequence));
    const body = {
      sequence,
      id: `00000000-0000-4000-8000-${String(sequence).padStart(12, "0")}`,
      intent_id: intentId,
      event_type: "note",
      actor: "a",
      payload: { n: sequence, text: "é" },
      created_at: createdAt.toISOString().replace("Z", "+00:00"),
      previous_event_hash: previous,
    };
    const hash = eventHashOf(body);
    rows.push({
      id: body.id,
      intentId,
      sequence,
      eventType: "note",
      actor: "a",
      payload: body.payload,
      createdAt,
      traceId: null,
      parentEventId: null,
      wire: JSON.stringify({ ...body, event_hash: hash }),
      eventHash: hash,
      previousEventHash: previous,
    });
    previous = hash;
  }
  return rows;
}

const run = (rows: StoredEvent[], last = rows.length) => {
  const checker = new ChainChecker();
  const breaks = rows.flatMap((row) => checker.check(row));
  const end = checker.missingAtEnd(last);
  return end ? [...breaks, end] : breaks;
};

describe("the chain checks of RFC 0019 2.2", () => {
  it("find nothing in a sound log", () => {
    expect(run(log(5))).toEqual([]);
  });

  it("report an altered event once, at that event", () => {
    const rows = log(5);
    const served = JSON.parse(rows[2]!.wire);
    served.payload.n = 99;
    rows[2] = { ...rows[2]!, wire: JSON.stringify(served), payload: served.payload };
    expect(run(rows).map((b) => [b.sequence, b.reason])).toEqual([[3, "hash_mismatch"]]);
  });

  it("report a column that no longer tells what the event is served with", () => {
    const rows = log(4);
    rows[1] = { ...rows[1]!, payload: { n: 7, text: "é" } };
    expect(run(rows).map((b) => [b.sequence, b.reason])).toEqual([[2, "row_mismatch"]]);
  });

  it("report a removed event as a gap, and events removed from the end", () => {
    const rows = log(5);
    expect(run([rows[0]!, rows[1]!, rows[3]!, rows[4]!]).map((b) => [b.sequence, b.reason])).toEqual([[3, "sequence_gap"]]);
    expect(run(rows.slice(0, 3), 5).map((b) => [b.sequence, b.reason])).toEqual([[4, "events_missing_at_end"]]);
  });

  it("report a rehashed event at the event after it, whose link it breaks", () => {
    const rows = log(4);
    const served = JSON.parse(rows[1]!.wire);
    served.payload.n = 42;
    const { event_hash: _old, ...content } = served;
    const hash = eventHashOf(content);
    rows[1] = { ...rows[1]!, payload: served.payload, wire: JSON.stringify({ ...content, event_hash: hash }), eventHash: hash };
    expect(run(rows).map((b) => [b.sequence, b.reason])).toEqual([[3, "previous_hash_mismatch"]]);
  });

  it("report events that were reordered", () => {
    const rows = log(4);
    const swapped = [rows[0]!, { ...rows[2]!, sequence: 2 }, { ...rows[1]!, sequence: 3 }, rows[3]!];
    expect(run(swapped).length).toBeGreaterThan(0);
  });
});
