import { describe, expect, it } from "vitest";
import { StatementNames, nameRepeatedStatements } from "./statement-names";

describe("StatementNames", () => {
  it("names a text from its third run on, the same name every time and in every process", () => {
    const names = new StatementNames();
    const text = "select x from t where id = $1";
    expect(names.nameOf(text)).toBeUndefined();
    expect(names.nameOf(text)).toBeUndefined();
    const name = names.nameOf(text);
    expect(name).toMatch(/^im_[0-9a-f]{32}$/);
    expect(names.nameOf(text)).toBe(name);
    expect(new StatementNames({ after: 1, maxNamed: 1, maxCounted: 1 }).nameOf(text)).toBe(name);
    expect(names.nameOf("select y from t where id = $1")).toBeUndefined();
  });

  it("names no more than maxNamed texts and counts no more than maxCounted", () => {
    const names = new StatementNames({ after: 2, maxNamed: 2, maxCounted: 3 });
    for (const text of ["a $1", "b $1", "c $1"]) names.nameOf(text);
    // The counter is full: a fourth text is never counted, so never named.
    expect(names.nameOf("d $1")).toBeUndefined();
    expect(names.nameOf("d $1")).toBeUndefined();
    expect(names.nameOf("a $1")).toBeDefined();
    expect(names.nameOf("b $1")).toBeDefined();
    // Two named: the third counted text stays unnamed however often it runs.
    expect(names.nameOf("c $1")).toBeUndefined();
    expect(names.nameOf("c $1")).toBeUndefined();
    expect(names.namedCount).toBe(2);
  });

  it("gives a text a new name when its statement's result changed shape", () => {
    const names = new StatementNames({ after: 1, maxNamed: 10, maxCounted: 10 });
    const first = names.nameOf("select * from t where id = $1")!;
    names.renamed(first);
    const second = names.nameOf("select * from t where id = $1")!;
    expect(second).toBe(`${first}_g1`);
    names.renamed(second);
    expect(names.nameOf("select * from t where id = $1")).toBe(`${first}_g2`);
  });
});

describe("nameRepeatedStatements", () => {
  /** A client that records what it was asked. */
  const recording = () => {
    const calls: unknown[][] = [];
    const client = { query: (...args: unknown[]) => (calls.push(args), Promise.resolve({ rows: [] })) };
    nameRepeatedStatements(client, new StatementNames({ after: 1, maxNamed: 10, maxCounted: 10 }));
    return { client, calls };
  };

  it("names parametrized statements given as a config or as text, and leaves the rest as they are", async () => {
    const { client, calls } = recording();
    const config = { text: "select $1::int", values: [1], rowMode: "array" };
    await client.query(config);
    await client.query({ text: "select $1::int" }, [2]);
    await client.query("select $1::int", [3]);
    await client.query("begin");
    await client.query({ text: "select 1", values: [] });
    await client.query({ text: "select $1::int", name: "mine", values: [4] });
    const streaming = { text: "select $1::int", values: [5], submit: () => undefined };
    await client.query(streaming);
    const [a, b, c, d, e, f, g] = calls.map((call) => call[0] as { name?: string });
    expect(a).toMatchObject({ text: "select $1::int", values: [1], rowMode: "array", name: expect.stringMatching(/^im_/) });
    expect(config).not.toHaveProperty("name");
    expect(b!.name).toBe(a!.name);
    expect(c).toEqual({ text: "select $1::int", name: a!.name });
    expect(calls[2]![1]).toEqual([3]);
    expect(d).toBe("begin");
    expect(e).not.toHaveProperty("name");
    expect(f!.name).toBe("mine");
    expect(g).toBe(streaming);
  });

  it("prepares no more than its limit on one connection; the rest run unnamed there", async () => {
    const calls: unknown[][] = [];
    const client = { query: (...args: unknown[]) => (calls.push(args), Promise.resolve({ rows: [] })) };
    nameRepeatedStatements(client, new StatementNames({ after: 1, maxNamed: 10, maxCounted: 10 }), 2);
    for (const text of ["a $1", "b $1", "c $1", "a $1", "c $1"]) await client.query({ text, values: [1] });
    const named = calls.map((call) => (call[0] as { name?: string }).name !== undefined);
    expect(named).toEqual([true, true, false, true, false]);
  });
});
