import { describe, expect, it } from "vitest";
import { bigint, integer, jsonb, pgSchema, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { tableSql } from "./table-sql";

const schema = pgSchema("s");
const things = schema.table("things", {
  id: uuid("id").primaryKey(),
  seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity().notNull(),
  tags: text("tags").array().notNull(),
  doc: jsonb("doc").$type<unknown>(),
  at: timestamp("at", { withTimezone: true, mode: "date" }),
  n: integer("n").notNull(),
});

describe("tableSql", () => {
  const t = tableSql(things);

  it("names the table and its columns as SQL text", () => {
    expect(t.name).toBe('"s"."things"');
    expect(t.columnList("x")).toBe('x."id", x."seq", x."tags", x."doc", x."at", x."n"');
  });

  it("encodes values with the columns' own codecs, skipping undefined and keeping null", () => {
    const at = new Date("2026-01-02T03:04:05.678Z");
    expect(t.driverValues({ tags: ['a "b"', "c,d"], doc: [1, { e: null }], at, n: 3, id: undefined })).toEqual({
      columns: ['"tags"', '"doc"', '"at"', '"n"'],
      values: [things.tags.mapToDriverValue(['a "b"', "c,d"]), JSON.stringify([1, { e: null }]), at.toISOString(), 3],
    });
    expect(t.driverValues({ doc: null })).toEqual({ columns: ['"doc"'], values: [null] });
  });

  it("decodes raw driver values as the query builder does", () => {
    expect(t.rowOf({ id: "u", seq: "42", tags: "{x,\"y z\"}", doc: { a: 1 }, at: "2026-01-02 03:04:05.678+00", n: 7, extra: "ignored" })).toEqual({
      id: "u",
      seq: 42,
      tags: ["x", "y z"],
      doc: { a: 1 },
      at: new Date("2026-01-02T03:04:05.678Z"),
      n: 7,
    });
    expect(t.rowOf({ id: "u", seq: 1, tags: [], doc: null, at: null, n: 0 })).toMatchObject({ doc: null, at: null, tags: [] });
  });
});
