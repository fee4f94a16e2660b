import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { exportRequested, startTracing, stopTracing } from "@intentmesh/telemetry";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent } from "../support/e2e-helpers";

/** Issue 17 point 2: spans named by route template; one trace from the gateway through NATS to the service. */
const exporter = new InMemorySpanExporter();
let cluster: TestCluster;
beforeAll(async () => {
  startTracing("tracing-test", [new SimpleSpanProcessor(exporter)]);
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
  await stopTracing();
});

describe("traces", () => {
  it("names the gateway span by the route template and continues its trace in the service that answers over the bus", async () => {
    const intent = await createIntent(cluster);
    exporter.reset();
    expect((await cluster.sdk().send("intentsGet", { intent_id: intent.id })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    const spans = exporter.getFinishedSpans();
    const http = spans.find((s) => s.name === "GET /intents/{intent_id}");
    expect(http, spans.map((s) => s.name).join(", ")).toBeDefined();
    expect(http!.attributes["http.route"]).toBe("/intents/{intent_id}");
    expect(http!.attributes["http.response.status_code"]).toBe(200);
    // No raw path with an id names a span.
    expect(spans.some((s) => s.name.includes(intent.id))).toBe(false);
    const bus = spans.find((s) => s.name === "im.intents.get");
    expect(bus).toBeDefined();
    expect(bus!.spanContext().traceId).toBe(http!.spanContext().traceId);
    // ... and into the service's SQL: the statement that read the intent, a child of the bus span.
    const sql = spans.filter((s) => s.attributes["db.system.name"] === "postgresql" && s.spanContext().traceId === http!.spanContext().traceId);
    expect(sql.length, spans.map((s) => s.name).join(", ")).toBeGreaterThan(0);
    const read = sql.find((s) => String(s.attributes["db.query.text"]).includes("intents"));
    expect(read).toBeDefined();
    expect(read!.parentSpanContext?.spanId).toBe(bus!.spanContext().spanId);
    expect(read!.name).toMatch(/^(SELECT|WITH) /);
    // The text is parameterized: the intent's id, a value, is not in it.
    for (const span of sql) expect(String(span.attributes["db.query.text"])).not.toContain(intent.id);
  });

  it("exports only when the standard OTEL_* variables ask for it", () => {
    expect(exportRequested({})).toBe(false);
    expect(exportRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(exportRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true);
    expect(exportRequested({ OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(exportRequested({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(false);
    expect(exportRequested({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" })).toBe(false);
  });
});
