import { pino, type DestinationStream, type Logger } from "pino";
import { trace } from "@opentelemetry/api";
import { currentRequestId } from "./request-context";

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
 * One JSON logger per service. Every line carries the service name, the request id of the work
 * it belongs to (request-context.ts), and, when a span is active, its trace_id and span_id so a
 * log line can be found from a trace and back.
 */
export function createLogger(service: string, level = process.env.LOG_LEVEL ?? "info", destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    mixin() {
      const requestId = currentRequestId();
      const span = trace.getActiveSpan();
      if (!span) return requestId ? { request_id: requestId } : {};
      const { traceId, spanId } = span.spanContext();
      return requestId ? { request_id: requestId, trace_id: traceId, span_id: spanId } : { trace_id: traceId, span_id: spanId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
