import { NodeSDK } from "@opentelemetry/sdk-node";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { trace, type Tracer } from "@opentelemetry/api";
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base";

let shutdown: (() => Promise<void>) | undefined;
let exporting = false;

/**
 * Whether finished spans go anywhere (an exporter or a test's span processor). Spans only a
 * reader of the trace store would see (one per SQL statement) are not made when none does.
 */
export const spansExported = (): boolean => exporting;

/** Whether the standard OTEL_* variables ask for spans to be exported. */
export function exportRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  if (env.OTEL_TRACES_EXPORTER) return env.OTEL_TRACES_EXPORTER !== "none";
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts OpenTelemetry once per process. When the standard variables ask for an exporter
 * (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), the
 * SDK exports spans as they say, with OTEL_SERVICE_NAME (else the process's name) and
 * OTEL_RESOURCE_ATTRIBUTES. Without one, a tracer provider with no exporter still creates real
 * trace ids and propagates them (into logs and NATS headers), so a first run needs no collector
 * and traces still join up. `spanProcessors` is for tests (an in-memory exporter).
 */
export function startTracing(serviceName: string, spanProcessors: SpanProcessor[] = []): void {
  if (shutdown) return;
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME || serviceName });
  exporting = exportRequested() || spanProcessors.length > 0;
  if (exportRequested() && !spanProcessors.length) {
    const sdk = new NodeSDK({ resource, instrumentations: [] });
    sdk.start();
    shutdown = () => sdk.shutdown();
    return;
  }
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  provider.register();
  shutdown = () => provider.shutdown();
}

export async function stopTracing(): Promise<void> {
  const stop = shutdown;
  shutdown = undefined;
  exporting = false;
  await stop?.().catch(() => undefined);
}

export function tracer(name = "intentmesh"): Tracer {
  return trace.getTracer(name);
}
