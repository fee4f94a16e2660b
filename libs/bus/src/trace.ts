import { context, propagation, type Context } from "@opentelemetry/api";
import { headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";

/**
 * There is no NATS instrumentation package, so trace context crosses the bus here: the
 * W3C `traceparent`/`tracestate` of the active span go into message headers and come back out.
 */
export function injectTrace(hdrs: MsgHdrs = natsHeaders()): MsgHdrs {
  propagation.inject(context.active(), hdrs, {
    set: (carrier, key, value) => carrier.set(key, value),
  });
  return hdrs;
}

export function extractTrace(hdrs: MsgHdrs | undefined): Context {
  if (!hdrs) return context.active();
  return propagation.extract(context.active(), hdrs, {
    get: (carrier, key) => carrier.get(key) || undefined,
    keys: (carrier) => carrier.keys(),
  });
}

/** Trace headers as a plain object, for storing beside an outbox row until the relay publishes it. */
export function traceCarrier(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
