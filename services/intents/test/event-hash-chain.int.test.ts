import fs from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "drizzle-orm";
import { canonicalJson, sha256Tag } from "@intentmesh/contracts";
import { openDatabase, rowsOf, type DatabaseHandle } from "@intentmesh/db";
import { createTestDatabase } from "../../../test/support/backends";
import { migrationsUpTo } from "../../../test/support/migrations";
import { MIGRATIONS_FOLDER } from "../src/service";
import { ChainChecker } from "../src/verifiable/chain";
import { storedEvents } from "./stored-events";

/**
 * Migration 0009: the database's RFC 8785 canonical JSON (intents.canonical_json) is the
 * JavaScript one byte for byte, and the events written before the migration are chained by it.
 */
let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
let handle: DatabaseHandle;
let before: string;


beforeAll(async () => {
  testDb = await createTestDatabase(inject("databaseUrl"));
  handle = await openDatabase({ url: testDb.url, poolSize: 2 });
  before = migrationsUpTo(MIGRATIONS_FOLDER, 8);
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
  fs.rmSync(before, { recursive: true, force: true });
});

const intentA = "11111111-1111-4111-8111-111111111111";
const intentB = "22222222-2222-4222-8222-222222222222";
const eventId = (intent: number, sequence: number) => `00000000-0000-4000-8${intent}00-${String(sequence).padStart(12, "0")}`;

async function insertOldEvent(intentId: string, id: string, sequence: number, payload: object) {
  const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, sequence));
  const wire = JSON.stringify({ sequence, id, intent_id: intentId, event_type: "comment", actor: "a", payload, created_at: createdAt.toISOString().replace("Z", "+00:00") });
  await handle.db.execute(sql`insert into intents.events (id, intent_id, sequence, event_type, actor, payload, created_at, wire)
    values (${id}, ${intentId}, ${sequence}, 'comment', 'a', ${JSON.stringify(payload)}::jsonb, ${createdAt}, ${wire})`);
}

/** The database's own message of a statement that failed (drizzle wraps it). */
async function failure(statement: Promise<unknown>): Promise<string> {
  try {
    await statement;
  } catch (error) {
    return String((error as { cause?: Error }).cause?.message ?? (error as Error).message);
  }
  return "succeeded";
}

const stored = (intentId: string) => storedEvents(handle, intentId);

describe("migration 0009 (RFC 0019 hash chain)", () => {
  it("chains the events written before it, intent by intent, and the trigger extends the chain from there", async () => {
    await handle.migrate("intents", before);
    for (let s = 1; s <= 4; s++) await insertOldEvent(intentA, eventId(1, s), s, { s, nested: { b: [1.5, "x"], a: null } });
    for (let s = 1; s <= 2; s++) await insertOldEvent(intentB, eventId(2, s), s, { s });

    await handle.migrate("intents", MIGRATIONS_FOLDER);

    for (const intentId of [intentA, intentB]) {
      const rows = await stored(intentId);
      const checker = new ChainChecker();
      expect(rows.flatMap((row) => checker.check(row))).toEqual([]);
      expect(rows[0]!.previousEventHash).toBeNull();
      // The served form carries the chain, and its hash is the RFC's over it.
      const served = JSON.parse(rows[rows.length - 1]!.wire);
      const { event_hash, ...content } = served;
      expect(event_hash).toBe(sha256Tag(canonicalJson(content)));
    }
    // The transient column is never stored.
    const [kept] = rowsOf<{ n: number }>(await handle.db.execute(sql`select count(*)::int as n from intents.events where payload_canonical is not null`));
    expect(kept!.n).toBe(0);
    // A new event goes on from the migrated chain's last hash.
    await insertOldEvent(intentA, eventId(1, 5), 5, { s: 5 });
    const rows = await stored(intentA);
    expect(rows[4]!.previousEventHash).toBe(rows[3]!.eventHash);
    const checker = new ChainChecker();
    expect(rows.flatMap((row) => checker.check(row))).toEqual([]);
  });

  it("refuses an event whose predecessor is missing, and any update or delete of an event", async () => {
    expect(await failure(insertOldEvent(intentA, eventId(1, 9), 9, {}))).toMatch(/missing or has no hash/);
    expect(await failure(handle.db.execute(sql`update intents.events set actor = 'b' where intent_id = ${intentA}`))).toMatch(/immutable/);
    expect(await failure(handle.db.execute(sql`delete from intents.events where intent_id = ${intentA}`))).toMatch(/immutable/);
  });
});

/** JSON values as a client can send them (what JSON.parse gives), with the awkward corners often. */
const awkwardKey = fc.constantFrom("a", "b", "A", "_", "é", "\u00e9\u0301", "\uE000", "\uFFFF", "😀", "\u{10000}", "ab", "a\u0000b".replace("\u0000", "\u0001"), "\"q\"", "\\", "\u2028", "\u007f", "");
const awkwardNumber = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(0, -0, 1e21, 1e20, 123456789012345680000, 1e-7, 1e-6, 0.000001234, 5e-324, 1.7976931348623157e308, 0.1, 2 ** 53, 2 ** 53 + 2, -1.5e-9, 100, 1e15, 999999999999999.9),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { weight: 3, arbitrary: awkwardNumber },
    { weight: 2, arbitrary: fc.string({ unit: "grapheme" }) },
    { weight: 1, arbitrary: fc.constantFrom("\u0001\b\f\n\r\t\u001f\"\\/", "\u2028\u2029", "😀𝄞") },
    { weight: 1, arbitrary: fc.constantFrom(true, false, null) },
    { weight: 1, arbitrary: fc.array(tie("value"), { maxLength: 4 }) },
    { weight: 2, arbitrary: fc.dictionary(fc.oneof(awkwardKey, fc.string({ maxLength: 6 })), tie("value"), { maxKeys: 5 }) },
  ),
})).value;

describe("intents.canonical_json", () => {
  it("is RFC 8785 as JavaScript writes it, for every JSON value a client can send", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(jsonValue, { minLength: 20, maxLength: 20 }), async (values) => {
        // NUL cannot be stored in PostgreSQL text; the gateway refuses it (NUL_CHARACTER) before anything is written.
        const texts = values.map((v) => JSON.stringify(v)).filter((t) => !t.includes("\\u0000"));
        const rows = rowsOf<{ c: string }>(await handle.db.execute(sql`select intents.canonical_json(t::jsonb) as c from jsonb_array_elements_text(${JSON.stringify(texts)}::jsonb) with ordinality as u(t, n) order by n`));
        expect(rows.map((r) => r.c)).toEqual(texts.map((t) => canonicalJson(JSON.parse(t))));
      }),
      { numRuns: 30 },
    );
  });

  it("prints numbers as ECMAScript does, exponent layouts included", async () => {
    // 62682844041053260: the shorter decimal lies exactly halfway between two doubles; PostgreSQL alone prints 17 digits (a property-test find).
    const numbers = [0, 1, -1, 0.1, 1e21, 1e-7, 1e-6, 123e-20, 1.5e300, 2 ** 53 + 2, 1e15, 1e16, 12345.678, -0.000001, 5e-324, 1.7976931348623157e308, 62682844041053260, -62682844041053260];
    const rows = rowsOf<{ c: string }>(await handle.db.execute(sql`select intents.json_number(n::numeric) as c from jsonb_array_elements_text(${JSON.stringify(numbers.map(String))}::jsonb) with ordinality as u(n, i) order by i`));
    expect(rows.map((r) => r.c)).toEqual(numbers.map((n) => JSON.stringify(n)));
    // Decimals that are not doubles (a budget statement computes them in numeric) print as the double a client reads.
    const [third] = rowsOf<{ c: string }>(await handle.db.execute(sql`select intents.canonical_json('{"x": 0.33333333333333333333333, "y": 80.00}'::jsonb) as c`));
    expect(third!.c).toBe(canonicalJson(JSON.parse('{"x": 0.33333333333333333333333, "y": 80.00}')));
  });
});
