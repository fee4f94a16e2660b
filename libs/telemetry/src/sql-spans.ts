import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { spansExported } from "./tracing";

/** The part of a pg client this module touches. */
interface QueryableClient {
  query: (...args: any[]) => any;
}

const tracer = () => trace.getTracer("intentmesh.sql");

/** The statement's first keyword, for the span name (`SELECT`, `INSERT`, `WITH`, ...). */
function operationOf(text: string): string {
  const match = /^\s*(?:--[^\n]*\n\s*)*([a-zA-Z]+)/.exec(text);
  return match ? match[1]!.toUpperCase() : "SQL";
}

/**
 * Gives every statement a pg client runs a client span, inside the span of the work that ran it
 * (a bus command, a consumer), so one trace goes gateway -> NATS -> service -> SQL. The span
 * carries the SQL text, which is parameterized (values are never in it, so no secret is), the
 * database and the server; never the parameter values. Statements outside any span (sweepers
 * between requests) open none, so idle polling does not fill the trace store, and none is made
 * when no exporter takes spans (they would cost CPU for no reader). Streaming
 * (submittable) calls pass through untouched; the services use none.
 */
export function traceSqlStatements(client: QueryableClient, target: { database?: string; host?: string; port?: number }): void {
  const query = client.query.bind(client);
  client.query = (...args: any[]) => {
    const first = args[0] as { text?: unknown; submit?: unknown } | string;
    if (!spansExported() || !trace.getActiveSpan() || (typeof first === "object" && first !== null && typeof first.submit === "function")) return query(...args);
    const text = typeof first === "string" ? first : String(first?.text ?? "");
    const operation = operationOf(text);
    const span = tracer().startSpan(`${operation} ${target.database ?? ""}`.trim(), {
      kind: SpanKind.CLIENT,
      attributes: {
        "db.system.name": "postgresql",
        "db.namespace": target.database ?? "",
        "db.operation.name": operation,
        "db.query.text": text.length > 2000 ? `${text.slice(0, 2000)}…` : text,
        "server.address": target.host ?? "",
        "server.port": target.port ?? 5432,
      },
    });
    const finish = (error?: { code?: unknown } | null) => {
      if (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        if (error.code) span.setAttribute("db.response.status_code", String(error.code));
      }
      span.end();
    };
    // pg-pool's own query() calls the client with a callback; everything else awaits a promise.
    const last = args.length - 1;
    if (typeof args[last] === "function") {
      const callback = args[last] as (error: unknown, result: unknown) => void;
      args[last] = (error: { code?: unknown } | null, result: unknown) => {
        finish(error);
        callback(error, result);
      };
      return query(...args);
    }
    let pending: Promise<unknown>;
    try {
      pending = query(...args) as Promise<unknown>;
    } catch (error) {
      finish(error as { code?: unknown });
      throw error;
    }
    pending.then(() => finish(), finish);
    return pending;
  };
}
