import { describe, expect, it } from "vitest";
import { param, sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { withParams } from "./statement";

const dialect = new PgDialect();
const built = (statement: SQL) => dialect.sqlToQuery(statement);

/** What withParams made before it parsed each text once: one nested SQL object per piece. */
function nested(text: string, params: unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  return sql.join(parts.map((part, index) => (index % 2 === 0 ? sql.raw(part) : sql`${params[Number(part) - 1]}`)), sql.raw(""));
}

describe("withParams", () => {
  const cases: [string, unknown[]][] = [
    ["select 1", []],
    ["", []],
    ["$1", ["only"]],
    ["select a from t where a = $1 and b = $2", [1, "x"]],
    ["update t set a = $3, b = $1 where c = $2 and d = $1", ["one", 2, null]],
    ["insert into t (a, b) values ($1, $2) returning $10", [new Date(0), { j: [1] }, 3, 4, 5, 6, 7, 8, 9, "ten"]],
    ["select $1::text, m from unnest($2::text[]) as m", ["c", param(["a", "b"])]],
    ["select * from t where a in $1", [[1, 2, 3]]],
  ];
  it.each(cases)("builds %j as the nested form did, text and parameters", (text, params) => {
    expect(built(withParams(text, params))).toEqual(built(nested(text, params)));
    // Parsed once, used again with other values.
    expect(built(withParams(text, params.map((p) => (typeof p === "number" ? p + 1 : p))))).toEqual(
      built(nested(text, params.map((p) => (typeof p === "number" ? p + 1 : p)))),
    );
  });

  it("passes an array wrapped in param as one parameter", () => {
    expect(built(withParams("select $1::text[]", [param(["a", "b"])]))).toEqual({ sql: "select $1::text[]", params: [["a", "b"]], typings: ["none"] });
  });
});
