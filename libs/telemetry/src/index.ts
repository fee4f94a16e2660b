export { createLogger, type Logger } from "./logger";
export { exportRequested, spansExported, startTracing, stopTracing, tracer } from "./tracing";
export { stopOnSignals } from "./shutdown";
export { StartupError, isStartupError, redactUrl, runMain } from "./startup";
export { REQUEST_ID_HEADER, currentRequestId, requestIdFrom, withRequestId } from "./request-context";
export { metrics, metricsText, METRICS_CONTENT_TYPE, registry as metricsRegistry, scrapedGauge, serveMetrics, timed, type ReadinessReport } from "./metrics";
export { traceSqlStatements } from "./sql-spans";
export { baseConfigSchema, documented, natsAuthOf, parseConfig, type BaseConfig } from "./config";
