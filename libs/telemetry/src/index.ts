export { createLogger, type Logger } from "./logger";
export { startTracing, stopTracing, tracer, inSpan } from "./tracing";
export { stopOnSignals } from "./shutdown";
