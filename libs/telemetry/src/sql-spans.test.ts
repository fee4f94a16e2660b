import { describe, expect, it } from "vitest";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { trace } from "@opentelemetry/api";
import { spansExported, startTracing, stopTracing } from "./tracing";
import { traceSqlStatements } from "./sql-spans";

/** SQL spans are made inside a span of work and only when some exporter takes them. */
describe("traceSqlStatements", () => {
  it("passes statements through untouched while no exporter takes spans, and spans them once one does", async () => {
    const calls: unknown[][] = [];
    const client = { query: async (...args: unknown[]) => (calls.push(args), { rows: [] }) };
    traceSqlStatements(client, { database: "db", host: "127.0.0.1", port: 5432 });
    expect(spansExported()).toBe(false);
    await client.query({ text: "select 1", values: [] });
    expect(calls).toHaveLength(1);

    const exporter = new InMemorySpanExporter();
    startTracing("sql-span-test", [new SimpleSpanProcessor(exporter)]);
    try {
      expect(spansExported()).toBe(true);
      // Outside any span of work: no span.
      await client.query({ text: "select 2", values: ["secret-value"] });
      expect(exporter.getFinishedSpans()).toHaveLength(0);
      await trace.getTracer("test").startActiveSpan("work", async (work) => {
        await client.query({ text: "select $1::text", values: ["secret-value"] });
        work.end();
      });
      const sql = exporter.getFinishedSpans().filter((span) => span.attributes["db.system.name"] === "postgresql");
      expect(sql).toHaveLength(1);
      expect(sql[0]!.name).toBe("SELECT db");
      expect(sql[0]!.attributes["db.query.text"]).toBe("select $1::text");
      expect(JSON.stringify(sql[0]!.attributes)).not.toContain("secret-value");
    } finally {
      await stopTracing();
    }
    expect(spansExported()).toBe(false);
    expect(calls).toHaveLength(3);
  });
});
