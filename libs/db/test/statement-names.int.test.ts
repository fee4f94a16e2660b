import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openDatabase, rowsOf, type DatabaseHandle } from "../src/database";
import { withParams } from "../src/statement";
import { StatementNames, nameRepeatedStatements } from "../src/statement-names";

// One connection, so every statement below runs where pg_prepared_statements can see it.
const schemaName = `names_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await openDatabase({ url: inject("databaseUrl"), poolSize: 1 });
  await handle.db.execute(sql.raw(`create schema ${schemaName}; create table ${schemaName}.t (id int primary key, a text)`));
  await handle.db.execute(sql.raw(`insert into ${schemaName}.t values (1, 'one'), (2, 'two')`));
});
afterAll(async () => {
  await handle.db.execute(sql.raw(`drop schema if exists ${schemaName} cascade`));
  await handle.close();
});

const prepared = async (text: string) =>
  rowsOf<{ name: string }>(await handle.db.execute(withParams("select name from pg_prepared_statements where statement = $1", [text]))).map((row) => row.name);

describe("repeated statements on PostgreSQL", () => {
  it("are left unnamed when the option is off", async () => {
    const plain = await openDatabase({ url: inject("databaseUrl"), poolSize: 1, statementNames: false });
    try {
      const text = `select a from ${schemaName}.t where id = $1 and 1 = 1`;
      for (let i = 0; i < 4; i++) await plain.db.execute(withParams(text, [1]));
      const names = rowsOf<{ name: string }>(await plain.db.execute(withParams("select name from pg_prepared_statements where statement = $1", [text])));
      expect(names).toEqual([]);
    } finally {
      await plain.close();
    }
  });

  it("are prepared on the connection from their third run, in and out of transactions, with the same answers", async () => {
    const text = `select a from ${schemaName}.t where id = $1`;
    const answers: string[] = [];
    for (const id of [1, 2]) answers.push(...rowsOf<{ a: string }>(await handle.db.execute(withParams(text, [id]))).map((row) => row.a));
    expect(await prepared(text)).toEqual([]);
    answers.push(...(await handle.db.transaction(async (tx) => rowsOf<{ a: string }>(await tx.execute(withParams(text, [1]))).map((row) => row.a))));
    expect(await prepared(text)).toEqual([expect.stringMatching(/^im_[0-9a-f]{32}$/)]);
    for (const id of [2, 1, 2]) answers.push(...rowsOf<{ a: string }>(await handle.db.execute(withParams(text, [id]))).map((row) => row.a));
    expect(answers).toEqual(["one", "two", "one", "two", "one", "two"]);
    expect(await prepared(text)).toHaveLength(1);
  });

  it("recover when a migration changes the columns a prepared statement answers: one call fails, the next is prepared afresh", async () => {
    const text = `select * from ${schemaName}.t where id = $1`;
    for (let i = 0; i < 3; i++) await handle.db.execute(withParams(text, [1]));
    await handle.db.execute(sql.raw(`alter table ${schemaName}.t add column b int default 7`));
    await expect(handle.db.execute(withParams(text, [1]))).rejects.toMatchObject({ cause: { code: "0A000" } });
    const rows = rowsOf<Record<string, unknown>>(await handle.db.execute(withParams(text, [1])));
    expect(rows).toEqual([{ id: 1, a: "one", b: 7 }]);
    expect(await prepared(text)).toContainEqual(expect.stringMatching(/^im_[0-9a-f]{32}_g1$/));
  });

  it("keep working on a held connection when pg cannot serialise a value: that call fails, the text then runs unnamed there", async () => {
    // The pool discards a connection whose statement failed; a client held across statements keeps it.
    const client = new pg.Client({ connectionString: inject("databaseUrl") });
    await client.connect();
    try {
      nameRepeatedStatements(client, new StatementNames({ after: 1, maxNamed: 10, maxCounted: 10 }));
      const text = `select $1::jsonb as v, a from ${schemaName}.t where id = $2`;
      await client.query(text, [{ n: 0 }, 1]);
      // pg closes the statement on the server when serialising a parameter throws, yet keeps it as prepared.
      await expect(client.query(text, [{ n: 1n }, 1])).rejects.toThrow(/BigInt/);
      for (let i = 0; i < 3; i++) expect((await client.query(text, [{ n: i }, 2])).rows).toEqual([{ v: { n: i }, a: "two" }]);
    } finally {
      await client.end();
    }
  });
});
