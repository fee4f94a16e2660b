import { NodeSDK } from "@opentelemetry/sdk-node";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import { trace, type Tracer } from "@opentelemetry/api";

let shutdown: (() => Promise<void>) | undefined;

/**
 * Starts OpenTelemetry once per process. With OTEL_EXPORTER_OTLP_ENDPOINT set, the SDK exports
 * spans over OTLP (configured by the standard OTEL_* variables). Without it, a tracer provider
 * with no exporter still creates real trace ids and propagates them (into logs and NATS
 * headers), so a first run needs no collector and traces still join up.
 */
export function startTracing(serviceName: string): void {
  if (shutdown) return;
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName });
  if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) {
    const sdk = new NodeSDK({ resource, instrumentations: [] });
    sdk.start();
    shutdown = () => sdk.shutdown();
    return;
  }
  const provider = new NodeTracerProvider({ resource, spanProcessors: [] });
  provider.register();
  shutdown = () => provider.shutdown();
}

export async function stopTracing(): Promise<void> {
  const stop = shutdown;
  shutdown = undefined;
  await stop?.().catch(() => undefined);
}

export function tracer(name = "intentmesh"): Tracer {
  return trace.getTracer(name);
}
