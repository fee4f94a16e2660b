import { appError } from "@intentmesh/contracts";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { headers as natsHeaders, type Msg, type MsgHdrs, type Subscription } from "@nats-io/transport-node";
import {
  AppError,
  TOO_LARGE_ISSUE,
  errors,
  healthCommand,
  COMMON_ROUTE_ERRORS,
  accessErrorsOf,
  findUnsafeJsonValue,
  isAppError,
  unsafeJsonError,
  type Caller,
  type CommandDef,
  type CommandInput,
  type CommandOutput,
  type CommandResult,
  type ParsedInput,
  type WireError,
  type z,
} from "@intentmesh/contracts";
import { currentRequestId, metrics, REQUEST_ID_HEADER, withRequestId, type Logger } from "@intentmesh/telemetry";
import type { Bus } from "./connection";
import { extractTrace, injectTrace } from "./trace";

/**
 * Reply protocol: the body is the result's JSON; the `Im-Status` header says `ok` or `error`
 * (then the body is the wire error). A result with a numeric `version` also carries it in
 * `Im-Version`, so the gateway can set ETag and pass the body through without parsing it.
 */
export const REPLY_STATUS_HEADER = "Im-Status";
export const REPLY_VERSION_HEADER = "Im-Version";

/**
 * A result a handler has already serialized (for instance a page Postgres built as JSON): it
 * goes onto the wire as it is, with its version when it has one.
 */
export class RawJson<T = unknown> {
  /** Type only: the answer these bytes hold, so a handler's RawJson is checked like its plain result. */
  declare readonly answer?: T;
  constructor(
    readonly json: string,
    readonly version?: number,
  ) {}
}

const encoder = new TextEncoder();

/**
 * TEST-ONLY (a test harness turns them on for its bus, see Bus.checks): every answer is held to
 * its command's `output`, and every error code to its command's `errors` (plus the common ones);
 * one that drifted becomes a 500 naming the difference, so a handler and its catalogue entry
 * cannot part ways unnoticed. Off in production: the types already hold handlers to the output.
 */
function assertOutput(def: CommandDef, data: unknown): void {
  const wire: unknown = data instanceof RawJson ? JSON.parse(data.json) : JSON.parse(JSON.stringify(data ?? null));
  const checked = def.output.safeParse(wire);
  if (checked.success) return;
  const issue = checked.error.issues[0]!;
  throw appError("INTERNAL_ERROR", `${def.subject} answered what its catalogued output does not allow: ${issue.path.join(".") || "(answer)"}: ${issue.message}`);
}

const declaresError = (def: CommandDef, code: string): boolean =>
  (def.errors as readonly string[]).includes(code) || (COMMON_ROUTE_ERRORS as readonly string[]).includes(code) || (accessErrorsOf(def) as readonly string[]).includes(code);
const decoder = new TextDecoder();

/**
 * Answers one command: receives its parsed input, returns its output (or that output already
 * serialized). A handler whose result is not the command's output does not compile.
 */
export type CommandHandler<C extends CommandDef> = (input: ParsedInput<C>, caller: Caller) => Promise<CommandResult<C> | RawJson<CommandResult<C>>>;

/**
 * Serves one command subject with a queue group named after the service, so replicas share the
 * load. The input is validated with the command's zod schema; an AppError thrown by the handler
 * travels back as data, anything else becomes a logged 500 without internals.
 */
export function serveCommand<C extends CommandDef>(bus: Bus, def: C, handler: CommandHandler<C>, logger: Logger): Subscription {
  const tracer = trace.getTracer("intentmesh.bus");
  return bus.nc.subscribe(bus.subject(def.subject), {
    queue: `svc.${def.service}`,
    callback: (err, msg) => {
      if (err) {
        logger.error({ err, subject: def.subject }, "subscription failed");
        return;
      }
      void withRequestId(msg.headers?.get(REQUEST_ID_HEADER), () =>
        context.with(extractTrace(msg.headers), () =>
          tracer.startActiveSpan(def.subject, { kind: SpanKind.SERVER, attributes: { "messaging.system": "nats" } }, async (span) => {
            const end = metrics.busDuration.startTimer({ subject: def.subject });
            try {
              const reply = await replyTo(bus, msg, def, handler, logger);
              end();
              metrics.busRequests.inc({ subject: def.subject, outcome: reply.status >= 500 ? "server_error" : reply.status >= 400 ? "client_error" : "ok" });
              if (reply.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
              if (msg.reply) respondSafely(bus, msg, reply, def.subject, logger);
            } finally {
              span.end();
            }
          }),
        ),
      )
        // Nothing a request carries may end the process: whatever escaped is logged here.
        .catch((error: unknown) => logger.error({ err: error, subject: def.subject }, "command reply failed"));
    },
  });
}

interface Reply {
  status: number;
  headers: MsgHdrs;
  body: Uint8Array;
}

/** Runs the handler and encodes its result or its error as a reply of the reply protocol. */
async function replyTo<C extends CommandDef>(bus: Bus, msg: Msg, def: C, handler: CommandHandler<C>, logger: Logger): Promise<Reply> {
  const hdrs = natsHeaders();
  try {
    const data = await handle(msg, def, handler);
    if (bus.checks.outputs) assertOutput(def, data);
    hdrs.set(REPLY_STATUS_HEADER, "ok");
    const version = (data as { version?: unknown } | null)?.version;
    if (typeof version === "number") hdrs.set(REPLY_VERSION_HEADER, String(version));
    return { status: 200, headers: hdrs, body: encoder.encode(data instanceof RawJson ? data.json : JSON.stringify(data ?? null)) };
  } catch (error) {
    let failure = isAppError(error) ? error : classifyFailure(error, logger, def.subject);
    if (bus.checks.errors && !declaresError(def, failure.code)) {
      logger.error({ subject: def.subject, code: failure.code }, "a command answered an error code the catalogue does not declare for it");
      failure = appError("INTERNAL_ERROR", `${def.subject} answered ${failure.code}, which the catalogue does not declare for it`);
    }
    return errorReply(failure);
  }
}

function errorReply(error: AppError): Reply {
  const hdrs = natsHeaders();
  hdrs.set(REPLY_STATUS_HEADER, "error");
  return { status: error.status, headers: hdrs, body: encoder.encode(JSON.stringify(error.toWire())) };
}

/** Room left in a message for the reply headers (status, version, trace) beside the body. */
const HEADER_ALLOWANCE = 4096;

/**
 * Sends a reply that fits in one bus message. A body larger than the server's max_payload would
 * make the publish throw; it becomes an error reply instead, so the caller gets an answer and the
 * process lives. The entry limits (LIMITS in libs/contracts) keep valid data from getting there.
 */
function respondSafely(bus: Bus, msg: Msg, reply: Reply, subject: string, logger: Logger): void {
  const maxPayload = bus.nc.info?.max_payload ?? 1024 * 1024;
  let sent = reply;
  if (reply.body.byteLength + HEADER_ALLOWANCE > maxPayload) {
    logger.error({ subject, bytes: reply.body.byteLength, maxPayload }, "reply larger than the bus can carry; answered with an error");
    sent = errorReply(
      appError("REPLY_TOO_LARGE", "the answer is larger than the bus can carry; it has been logged", {
        bytes: reply.body.byteLength,
        limit_bytes: maxPayload - HEADER_ALLOWANCE,
      }),
    );
  }
  try {
    msg.respond(sent.body, { headers: sent.headers });
  } catch (error) {
    // A closed or reconnecting connection: the requester times out and retries; the process goes on.
    logger.warn({ err: error, subject }, "reply could not be sent");
  }
}

async function handle<C extends CommandDef>(msg: Msg, def: C, handler: CommandHandler<C>): Promise<CommandResult<C> | RawJson<CommandResult<C>>> {
  let envelope: { caller?: Caller; input?: unknown };
  try {
    envelope = JSON.parse(decoder.decode(msg.data)) as typeof envelope;
  } catch {
    throw errors.invalidJson(`the request on ${def.subject} is not JSON`);
  }
  if (!envelope.caller) throw errors.unauthorized("the request carries no caller");
  // The gateway refuses these first; a service on the bus holds its callers to the same rules.
  const unsafe = findUnsafeJsonValue(envelope.input);
  if (unsafe) throw unsafeJsonError(unsafe, "the input");
  const parsed = def.input.safeParse(envelope.input ?? {});
  if (!parsed.success) throw validationError(parsed.error);
  for (let attempt = 1; ; attempt++) {
    try {
      return await handler(parsed.data as ParsedInput<C>, envelope.caller);
    } catch (error) {
      if (attempt >= CONFLICT_ATTEMPTS || !isTransactionConflict(error)) throw error;
    }
  }
}

/** How many times a command runs when PostgreSQL aborts it to break a deadlock or a serialization conflict. */
const CONFLICT_ATTEMPTS = 3;

/**
 * A deadlock (40P01) or serialization failure (40001): PostgreSQL rolled the whole transaction
 * back, so running the handler again is safe and is what the client would have to do anyway.
 */
export function isTransactionConflict(error: unknown): boolean {
  const code = String((error as { code?: unknown })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code ?? "");
  return code === "40P01" || code === "40001";
}

/**
 * An unexpected failure is a 500, unless the database connection itself failed (refused, reset,
 * PostgreSQL shutting down or restarting): that is a 503 the caller may retry, and nothing was
 * written, since a statement or transaction that loses its connection does not commit. A value
 * PostgreSQL refuses to store (class 22, data exception) or that passes one of its size limits
 * (class 54) is the caller's: 400 or 413, logged, since the contracts should have caught it first.
 */
function classifyFailure(error: unknown, logger: Logger, subject: string): AppError {
  const code = String((error as { code?: unknown; cause?: { code?: unknown } })?.code ?? (error as { cause?: { code?: unknown } })?.cause?.code ?? "");
  const transient = /^(08|57P0[1-3]|53300)/.test(code) || ["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT"].includes(code);
  const message = String((error as Error)?.message ?? "");
  if (transient || /Connection terminated|connection timeout|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect/i.test(message)) {
    logger.warn({ err: error, subject }, "database unavailable");
    return errors.unavailable("the database is unavailable right now; nothing was written, try again");
  }
  if (/^22/.test(code)) {
    logger.warn({ err: error, subject }, "a value the contracts let through was refused by the database");
    return appError("VALUE_NOT_STORABLE", "a value in the request cannot be stored (out of range or malformed); nothing was written", { sqlstate: code });
  }
  if (/^54/.test(code)) {
    logger.warn({ err: error, subject }, "a value passed a database size limit");
    return appError("VALUE_TOO_LARGE", "a value in the request is too large to store; nothing was written", { sqlstate: code });
  }
  logger.error({ err: error, subject }, "command failed");
  return errors.internal();
}

/**
 * Turns zod issues into the one 400 shape: a sentence naming the first problem, every issue in
 * details. An issue that is a size limit (withinBytes) makes it a 413 VALUE_TOO_LARGE instead.
 */
export function validationError(error: z.ZodError): AppError {
  const issues = error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message, code: issue.code }));
  const tooLarge = error.issues.find((issue) => (issue as { params?: { code?: string } }).params?.code === TOO_LARGE_ISSUE);
  if (tooLarge) {
    const where = tooLarge.path.join(".") || "the request";
    const { limit_bytes, actual_bytes } = (tooLarge as unknown as { params: { limit_bytes: number; actual_bytes: number } }).params;
    return appError("VALUE_TOO_LARGE", `${where} ${tooLarge.message}`, { path: where, limit_bytes, actual_bytes });
  }
  const first = issues[0];
  const where = first?.path ? `${first.path}: ` : "";
  return errors.validation(`the request is invalid: ${where}${first?.message ?? "unknown problem"}`, issues);
}

/** A successful reply as it came off the wire: the JSON bytes of the result and its version, if any. */
export interface RawReply {
  body: Uint8Array;
  version: number | undefined;
}

/** Sends commands and turns error replies back into AppError. */
export class BusClient {
  constructor(
    private readonly bus: Bus,
    private readonly timeoutMs = 5000,
  ) {}

  /** Sends a command and answers its output, typed by the command's definition. */
  async request<C extends CommandDef>(def: C, caller: Caller, input: CommandInput<C>): Promise<CommandOutput<C>> {
    const reply = await this.requestRaw(def, caller, input);
    return JSON.parse(decoder.decode(reply.body)) as CommandOutput<C>;
  }

  /** The reply without decoding it: the gateway sends these bytes on as the HTTP body. */
  async requestRaw<C extends CommandDef>(def: C, caller: Caller, input: CommandInput<C>): Promise<RawReply> {
    const payload = encoder.encode(JSON.stringify({ caller, input }));
    const maxPayload = this.bus.nc.info?.max_payload ?? 1024 * 1024;
    if (payload.byteLength + HEADER_ALLOWANCE > maxPayload) {
      throw appError("PAYLOAD_TOO_LARGE", `the request is larger than the ${maxPayload - HEADER_ALLOWANCE} bytes the bus carries`, {
        limit_bytes: maxPayload - HEADER_ALLOWANCE,
      });
    }
    let msg: Msg;
    try {
      const headers = injectTrace();
      const requestId = currentRequestId();
      if (requestId) headers.set(REQUEST_ID_HEADER, requestId);
      msg = await this.bus.nc.request(this.bus.subject(def.subject), payload, { timeout: this.timeoutMs, headers });
    } catch (error) {
      const text = String((error as Error).message ?? error);
      if (/no responders|503/i.test(text)) throw errors.unavailable(`no ${def.service} service is running to answer ${def.subject}`);
      if (/timeout/i.test(text)) throw errors.timeout(def.subject);
      throw errors.unavailable(`the bus could not carry ${def.subject}: ${text}`);
    }
    const status = header(msg.headers, REPLY_STATUS_HEADER);
    if (status !== "ok") {
      if (status === "error") throw AppError.fromWire(JSON.parse(decoder.decode(msg.data)) as WireError);
      throw errors.unavailable(`the reply on ${def.subject} does not follow the reply protocol`);
    }
    const version = header(msg.headers, REPLY_VERSION_HEADER);
    return { body: msg.data, version: version ? Number(version) : undefined };
  }

  /**
   * Publishes a hint on core NATS (no stream, no acknowledgement): something a reader may want to
   * read again, never a fact it must not miss. A publish that fails (NATS away) is dropped; the
   * readers of hints read everything again when they reconnect.
   */
  hint(subject: string, payload: unknown): void {
    try {
      this.bus.nc.publish(this.bus.subject(subject), encoder.encode(JSON.stringify(payload)));
    } catch {
      /* a hint is best effort by definition */
    }
  }
}

const header = (hdrs: MsgHdrs | undefined, name: string) => hdrs?.get(name) || undefined;

/**
 * `im.<service>.health`, the same for every service: the database answers a ping, and the
 * outbox backlog is reported (the gateway's /readyz asks each service). `extra` adds what a
 * service also wants to report.
 */
export function serveHealth(
  bus: Bus,
  service: string,
  dependencies: { database: { ping(): Promise<void> }; relay: { backlog(): Promise<number> } },
  logger: Logger,
  extra: () => Promise<Record<string, unknown>> = async () => ({}),
): Subscription {
  return serveCommand(
    bus,
    healthCommand(service),
    async () => {
      await dependencies.database.ping();
      return { service, database: "ok" as const, outbox_backlog: await dependencies.relay.backlog(), ...(await extra()) };
    },
    logger,
  );
}
