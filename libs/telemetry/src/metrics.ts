import http from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * The Prometheus metrics of one process (prom-client), one registry per process. Every service
 * updates the same series names, labelled by what varies; docs/operations.md says which metric
 * answers which question. Label values are always bounded sets (route templates, subjects,
 * durable names), never ids.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const metrics = {
  httpRequests: new Counter({ name: "intentmesh_http_requests_total", help: "HTTP requests answered by the gateway", labelNames: ["method", "route", "status"], registers: [registry] }),
  httpDuration: new Histogram({
    name: "intentmesh_http_request_duration_seconds",
    help: "HTTP request duration in the gateway, from arrival to the last byte",
    labelNames: ["method", "route"],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  busRequests: new Counter({ name: "intentmesh_bus_requests_total", help: "bus commands served, by subject and outcome (ok, client_error, server_error)", labelNames: ["subject", "outcome"], registers: [registry] }),
  busDuration: new Histogram({ name: "intentmesh_bus_request_duration_seconds", help: "time a service took to answer a bus command", labelNames: ["subject"], buckets: LATENCY_BUCKETS, registers: [registry] }),
  outboxPublished: new Counter({ name: "intentmesh_outbox_published_total", help: "outbox messages published to JetStream", labelNames: ["relay"], registers: [registry] }),
  outboxSkipped: new Counter({ name: "intentmesh_outbox_skipped_total", help: "outbox messages too large for the bus, skipped (a bug if ever above 0)", labelNames: ["relay"], registers: [registry] }),
  consumerMessages: new Counter({
    name: "intentmesh_consumer_messages_total",
    help: "messages of durable consumers by outcome: applied, duplicate (already in the inbox), redelivered (failed, will come again), terminated (poison)",
    labelNames: ["durable", "outcome"],
    registers: [registry],
  }),
  sweeperRuns: new Counter({ name: "intentmesh_sweeper_runs_total", help: "sweeper passes, by sweeper and outcome (ok, failed)", labelNames: ["sweeper", "outcome"], registers: [registry] }),
  sweeperDuration: new Histogram({ name: "intentmesh_sweeper_duration_seconds", help: "duration of a sweeper pass", labelNames: ["sweeper"], buckets: LATENCY_BUCKETS, registers: [registry] }),
  sweeperActions: new Counter({ name: "intentmesh_sweeper_actions_total", help: "rows a sweeper changed (leases expired, agents moved, messages expired, ...)", labelNames: ["sweeper"], registers: [registry] }),
  sseConnections: new Gauge({ name: "intentmesh_sse_connections", help: "open SSE streams in the gateway, by stream kind", labelNames: ["stream"], registers: [registry] }),
};

/** A gauge read when Prometheus scrapes (outbox backlog, pool use): `collect` sets its values. */
export function scrapedGauge(name: string, help: string, labelNames: string[], collect: (set: (labels: Record<string, string>, value: number) => void) => Promise<void> | void): Gauge {
  const existing = registry.getSingleMetric(name);
  if (existing) registry.removeSingleMetric(name);
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      await collect((labels, value) => this.set(labels, value));
    },
  });
}

/** Times `work` into a histogram and a counter by outcome. */
export async function timed<T>(histogram: Histogram, labels: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const end = histogram.startTimer(labels);
  try {
    return await work();
  } finally {
    end();
  }
}

/** The text Prometheus reads. */
export const metricsText = () => registry.metrics();
export const METRICS_CONTENT_TYPE = registry.contentType;

/** What a process says of its own dependencies for /readyz. */
export interface ReadinessReport {
  ready: boolean;
  [dependency: string]: unknown;
}

/**
 * A service process's operations listener (METRICS_PORT; the gateway serves the same paths on
 * its own port): /metrics in Prometheus text, /healthz (the process answers: liveness) and
 * /readyz (its own dependencies, from `readiness`: 200 when ready, else 503), for the probes of
 * an orchestrator. Nothing else is served, and nothing here carries data.
 */
export async function serveMetrics(port: number, host = "0.0.0.0", readiness?: () => Promise<ReadinessReport>): Promise<http.Server> {
  const json = (res: http.ServerResponse, status: number, body: unknown) => res.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path === "/healthz") return json(res, 200, { status: "ok" });
    if (path === "/readyz") {
      if (!readiness) return json(res, 200, { ready: true });
      readiness().then(
        (report) => json(res, report.ready ? 200 : 503, report),
        () => json(res, 503, { ready: false }),
      );
      return;
    }
    if (path !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    metricsText().then(
      (text) => res.writeHead(200, { "Content-Type": METRICS_CONTENT_TYPE }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
