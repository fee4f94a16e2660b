import { NodeSDK } from "@opentelemetry/sdk-node";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { trace, SpanStatusCode, type Span, type Tracer } from "@opentelemetry/api";

let sdk: NodeSDK | undefined;

/**
 * Starts the OpenTelemetry SDK once per process. Spans are exported over OTLP only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; without it the SDK still propagates context (trace ids in
 * logs and NATS headers) but exports nothing, so a first run needs no collector.
 */
export function startTracing(serviceName: string): void {
  if (sdk) return;
  const exporting = Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT);
  sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    ...(exporting ? {} : { traceExporter: undefined, spanProcessors: [] }),
    instrumentations: [],
  });
  sdk.start();
}

export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = undefined;
  await running?.shutdown().catch(() => undefined);
}

export function tracer(name = "intentmesh"): Tracer {
  return trace.getTracer(name);
}

/** Runs fn inside a new active span, recording an exception and error status when it throws. */
export async function inSpan<T>(name: string, attributes: Record<string, string>, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}
