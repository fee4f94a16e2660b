import { pino, type DestinationStream, type Logger } from "pino";
import { trace } from "@opentelemetry/api";

export type { Logger };

/** Field names that must never reach a log line, whatever object they sit in. */
const REDACTED_PATHS = [
  "key",
  "apiKey",
  "api_key",
  "password",
  "secret",
  "token",
  "authorization",
  "*.key",
  "*.apiKey",
  "*.api_key",
  "*.password",
  "*.secret",
  "*.token",
  "*.authorization",
  "req.headers['x-api-key']",
  "req.headers.authorization",
  "headers['x-api-key']",
];

/**
 * One JSON logger per service. Every line carries the service name and, when a span is active,
 * its trace_id and span_id so a log line can be found from a trace and back.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
