export { createLogger, type Logger } from "./logger";
export { startTracing, stopTracing, tracer } from "./tracing";
export { stopOnSignals } from "./shutdown";
