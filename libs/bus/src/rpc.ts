import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Msg, Subscription } from "@nats-io/transport-node";
import type { Bus } from "./connection";
import { AppError, errors, isAppError, type Caller, type CommandDef, type WireError, type z } from "@intentmesh/contracts";
import type { Logger } from "@intentmesh/telemetry";
import { extractTrace, injectTrace } from "./trace";

type Reply<T> = { ok: true; data: T } | { ok: false; error: WireError };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export type CommandHandler<I extends z.ZodType, O> = (input: z.infer<I>, caller: Caller) => Promise<O>;

/**
 * Serves one command subject with a queue group named after the service, so replicas share the
 * load. The input is validated with the command's zod schema; an AppError thrown by the handler
 * travels back as data, anything else becomes a logged 500 without internals.
 */
export function serveCommand<I extends z.ZodType, O>(
  bus: Bus,
  def: CommandDef<I>,
  handler: CommandHandler<I, O>,
  logger: Logger,
): Subscription {
  const tracer = trace.getTracer("intentmesh.bus");
  return bus.nc.subscribe(bus.subject(def.subject), {
    queue: `svc.${def.service}`,
    callback: (err, msg) => {
      if (err) {
        logger.error({ err, subject: def.subject }, "subscription failed");
        return;
      }
      const parent = extractTrace(msg.headers);
      void context.with(parent, () =>
        tracer.startActiveSpan(def.subject, { kind: SpanKind.SERVER, attributes: { "messaging.system": "nats" } }, async (span) => {
          const reply = await handle(msg, def, handler, logger);
          if (!reply.ok) span.setStatus({ code: reply.error.status >= 500 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET });
          if (msg.reply) msg.respond(encoder.encode(JSON.stringify(reply)));
          span.end();
        }),
      );
    },
  });
}

async function handle<I extends z.ZodType, O>(
  msg: Msg,
  def: CommandDef<I>,
  handler: CommandHandler<I, O>,
  logger: Logger,
): Promise<Reply<O>> {
  try {
    let envelope: { caller?: Caller; input?: unknown };
    try {
      envelope = JSON.parse(decoder.decode(msg.data)) as typeof envelope;
    } catch {
      throw errors.invalidJson(`the request on ${def.subject} is not JSON`);
    }
    if (!envelope.caller) throw errors.unauthorized("the request carries no caller");
    const parsed = def.input.safeParse(envelope.input ?? {});
    if (!parsed.success) throw validationError(parsed.error);
    return { ok: true, data: await handler(parsed.data, envelope.caller) };
  } catch (error) {
    if (isAppError(error)) return { ok: false, error: error.toWire() };
    logger.error({ err: error, subject: def.subject }, "command failed");
    return { ok: false, error: errors.internal().toWire() };
  }
}

/** Turns zod issues into the one 400 shape: a sentence naming the first problem, every issue in details. */
export function validationError(error: z.ZodError): AppError {
  const issues = error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message, code: issue.code }));
  const first = issues[0];
  const where = first?.path ? `${first.path}: ` : "";
  return errors.validation(`the request is invalid: ${where}${first?.message ?? "unknown problem"}`, issues);
}

/** Sends commands and turns error replies back into AppError. */
export class BusClient {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 5000,
  ) {}

  async request<O = unknown, I extends z.ZodType = z.ZodType>(def: CommandDef<I>, caller: Caller, input: z.input<I>): Promise<O> {
    let msg: Msg;
    try {
      msg = await this.bus.nc.request(this.bus.subject(def.subject), encoder.encode(JSON.stringify({ caller, input })), {
        timeout: this.timeoutMs,
        headers: injectTrace(),
      });
    } catch (error) {
      const text = String((error as Error).message ?? error);
      if (/no responders|503/i.test(text)) throw errors.unavailable(`no ${def.service} service is running to answer ${def.subject}`);
      if (/timeout/i.test(text)) throw errors.timeout(def.subject);
      throw errors.unavailable(`the bus could not carry ${def.subject}: ${text}`);
    }
    const reply = JSON.parse(decoder.decode(msg.data)) as Reply<O>;
    if (reply.ok) return reply.data;
    throw AppError.fromWire(reply.error);
  }
}
