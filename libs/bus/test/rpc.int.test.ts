import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { trace } from "@opentelemetry/api";
import { appError, AppError, type Caller, command, z } from "@intentmesh/contracts";
import { createLogger, startTracing, stopTracing, tracer, withRequestId } from "@intentmesh/telemetry";
import { connectBus, type Bus } from "../src/connection";
import { BusClient, serveCommand } from "../src/rpc";
import { testNamespace } from "../../../test/support/backends";

const logger = createLogger("rpc-test", "silent");
const caller: Caller = { principal: "tester", roles: ["agent"], actor: "tester", agent_id: null };
const echo = command("rpctest", "echo", z.object({ text: z.string().min(1) }), z.object({
    echoed: z.string().optional(),
    attempts: z.number().int().optional(),
    replica: z.number().int().optional(),
    blob: z.string().optional(),
    ok: z.boolean().optional(),
  }),
);
let bus: Bus;
let client: BusClient;

beforeAll(async () => {
  startTracing("rpc-test");
  bus = await connectBus(inject("natsUrl"), "rpc-test", testNamespace());
  client = new BusClient(bus, 2000);
});
afterAll(async () => {
  await bus?.close();
  await stopTracing();
});

describe("typed request/reply", () => {
  it("carries the caller and the trace context to the handler", async () => {
    let seen: { trace?: string; caller?: Caller } = {};
    const sub = serveCommand(bus, echo, async (input, who) => {
      seen = { trace: trace.getActiveSpan()?.spanContext().traceId, caller: who };
      return { echoed: (input as { text: string }).text };
    }, logger);
    const { result, traceId } = await tracer().startActiveSpan("client", async (span) => {
      const result = await client.request(echo, caller, { text: "hi" });
      span.end();
      return { result, traceId: span.spanContext().traceId };
    });
    sub.unsubscribe();
    expect(result).toEqual({ echoed: "hi" });
    expect(traceId).not.toMatch(/^0+$/);
    expect(seen.trace).toBe(traceId);
    expect(seen.caller).toEqual(caller);
  });

  it("carries the request id: every log line the handler writes bears the id the caller's work was opened with", async () => {
    const lines: string[] = [];
    const serviceLogger = createLogger("rpc-test-service", "info", { write: (line: string) => void lines.push(line) });
    const sub = serveCommand(bus, echo, async (input) => {
      await new Promise((r) => setTimeout(r, 5));
      serviceLogger.info({ text: (input as { text: string }).text }, "handled");
      return {};
    }, serviceLogger);
    await withRequestId("req-42.abc", () => client.request(echo, caller, { text: "with id" }));
    await client.request(echo, caller, { text: "without id" });
    // A direct bus caller cannot inject a line break or an unbounded id into every log line.
    await withRequestId("bad id\nforged", () => client.request(echo, caller, { text: "bad id" }));
    sub.unsubscribe();
    const handled = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "handled");
    expect(handled.map((l) => [l.text, l.request_id])).toEqual([
      ["with id", "req-42.abc"],
      ["without id", undefined],
      ["bad id", undefined],
    ]);
  });

  it("validates input against the contract before the handler runs", async () => {
    let called = false;
    const sub = serveCommand(bus, echo, async () => {
      called = true;
      return {};
    }, logger);
    const error = await client.request(echo, caller, { text: "" }).catch((e: unknown) => e);
    sub.unsubscribe();
    expect(called).toBe(false);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("VALIDATION_FAILED");
  });

  it("returns AppErrors as data and hides unexpected failures behind a 500", async () => {
    const sub = serveCommand(bus, echo, async (input) => {
      if ((input as { text: string }).text === "conflict") throw appError("VERSION_MISMATCH", "stale", { a: 1 }, { current_version: 4 });
      throw new Error("password=hunter2 leaked in a stack");
    }, logger);
    const conflict = (await client.request(echo, caller, { text: "conflict" }).catch((e: unknown) => e)) as AppError;
    const crash = (await client.request(echo, caller, { text: "boom" }).catch((e: unknown) => e)) as AppError;
    sub.unsubscribe();
    expect(conflict.toBody()).toEqual({ code: "VERSION_MISMATCH", message: "stale", details: { a: 1 }, current_version: 4 });
    expect(crash.status).toBe(500);
    expect(crash.message).not.toContain("hunter2");
  });

  it("answers 503, not 500, when the database connection failed under a handler", async () => {
    const sub = serveCommand(bus, echo, async (input) => {
      const code = (input as { text: string }).text;
      throw Object.assign(new Error(`connection lost (${code})`), { code });
    }, logger);
    const refused = (await client.request(echo, caller, { text: "ECONNREFUSED" }).catch((e: unknown) => e)) as AppError;
    const shutdown = (await client.request(echo, caller, { text: "57P01" }).catch((e: unknown) => e)) as AppError;
    const constraint = (await client.request(echo, caller, { text: "23505" }).catch((e: unknown) => e)) as AppError;
    sub.unsubscribe();
    expect([refused.status, shutdown.status]).toEqual([503, 503]);
    expect(refused.code).toBe("SERVICE_UNAVAILABLE");
    expect(constraint.status).toBe(500);
  });

  it("runs a command again when PostgreSQL aborted it to break a deadlock or a serialization conflict, up to three times", async () => {
    const attempts = new Map<string, number>();
    const sub = serveCommand(bus, echo, async (input) => {
      const text = (input as { text: string }).text;
      const [code, failures] = text.split(":") as [string, string];
      const n = (attempts.get(text) ?? 0) + 1;
      attempts.set(text, n);
      if (n <= Number(failures)) throw Object.assign(new Error(`aborted (${code})`), { code });
      return { text, attempts: n };
    }, logger);
    const deadlock = await client.request(echo, caller, { text: "40P01:2" });
    const serialization = await client.request(echo, caller, { text: "40001:1" });
    const endless = (await client.request(echo, caller, { text: "40P01:9" }).catch((e: unknown) => e)) as AppError;
    const other = (await client.request(echo, caller, { text: "23505:1" }).catch((e: unknown) => e)) as AppError;
    sub.unsubscribe();
    expect([deadlock.attempts, serialization.attempts]).toEqual([3, 2]);
    expect(endless.status).toBe(500);
    expect(attempts.get("40P01:9")).toBe(3);
    expect(other.status).toBe(500);
    expect(attempts.get("23505:1")).toBe(1);
  });

  it("answers 503 when no service serves the subject", async () => {
    const error = (await client.request(echo, caller, { text: "anyone?" }).catch((e: unknown) => e)) as AppError;
    expect(error.status).toBe(503);
    expect(error.code).toBe("SERVICE_UNAVAILABLE");
  });

  it("spreads requests over replicas in one queue group", async () => {
    const served = [0, 0];
    const subs = [0, 1].map((i) => serveCommand(bus, echo, async () => ({ replica: ++served[i]! }), logger));
    await Promise.all(Array.from({ length: 40 }, () => client.request(echo, caller, { text: "x" })));
    subs.forEach((s) => s.unsubscribe());
    expect(served[0]! + served[1]!).toBe(40);
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
  });
});

describe("streams", () => {
  it("are created once when several replicas ensure them at the same moment", async () => {
    const { ensureStream } = await import("../src/streams");
    const spec = { name: "IM_RACETEST", subjects: ["im.evt.racetest.>"] };
    await Promise.all(Array.from({ length: 6 }, () => ensureStream(bus, spec)));
    const info = await bus.jsm.streams.info(bus.streamName(spec.name));
    expect(info.config.subjects).toEqual([bus.subject("im.evt.racetest.>")]);
    await bus.jsm.streams.delete(bus.streamName(spec.name));
  });
});

describe("replies and requests the bus cannot carry", () => {
  it("answers a result larger than max_payload with REPLY_TOO_LARGE, and keeps serving", async () => {
    const big = bus.nc.info!.max_payload + 10;
    const sub = serveCommand(bus, echo, async (input) => ((input as { text: string }).text === "big" ? { blob: "b".repeat(big) } : { ok: true }), logger);
    const error = await client.request(echo, caller, { text: "big" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "REPLY_TOO_LARGE", status: 500 });
    expect(await client.request(echo, caller, { text: "small" })).toEqual({ ok: true });
    sub.unsubscribe();
  });

  it("refuses a request larger than the bus carries with 413 before sending it", async () => {
    let called = false;
    const sub = serveCommand(bus, echo, async () => ((called = true), {}), logger);
    const error = await client.request(echo, caller, { text: "r".repeat(bus.nc.info!.max_payload) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", status: 413 });
    expect(called).toBe(false);
    sub.unsubscribe();
  });

  it("refuses unsafe values from any bus caller, not only the gateway", async () => {
    let called = false;
    const sub = serveCommand(bus, echo, async () => ((called = true), {}), logger);
    const error = await client.request(echo, caller, { text: "a\u0000b" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "NUL_CHARACTER", status: 400 });
    expect(called).toBe(false);
    sub.unsubscribe();
  });
});
