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
    expect((await cluster.api(`/intents/${intent.id}`)).status).toBe(200);
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
