import http from "node:http";
import { AsyncLocalStorage } from "node:async_hooks";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@intentmesh/telemetry";
import { errorHandler, jsonBody } from "./http";
import { byteLimit } from "./body-read";

// The direct body reader (body-read.ts) against express.raw: jsonBody with each, the same requests,
// the same answers (the body read, or the error), the request's async context kept, and the
// connection still usable after a refused body.
const LIMIT = "1kb";
const context = new AsyncLocalStorage<string>();
const servers: http.Server[] = [];
let direct: number;
let viaRaw: number;

async function start(direct: boolean): Promise<number> {
  const app = express();
  app.use((req, _res, next) => context.run(String(req.headers["x-tag"]), next));
  app.use(jsonBody(LIMIT, { direct }));
  app.all("/echo", (req, res) => void res.json({ body: req.body === undefined ? "(none)" : req.body, absent: Boolean(res.locals.bodyAbsent), tag: context.getStore() ?? null }));
  app.use(errorHandler(createLogger("body-read-test", "silent")));
  const server = http.createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  direct = await start(true);
  viaRaw = await start(false);
});
afterAll(() => Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))));

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function send(port: number, headers: Record<string, string>, body?: Buffer | string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/echo", method: "POST", headers: { "x-tag": "ctx", ...headers }, agent }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: text.replace(/"request_id":"[^"]*"/, "") }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const json = (body: string | Buffer, type = "application/json") => ({ headers: { "content-type": type, "content-length": String(Buffer.byteLength(body)) }, body });
const cases: [string, { headers: Record<string, string>; body?: Buffer | string }][] = [
  ["a JSON object", json('{"a":1,"b":[true,null]}')],
  ["JSON with a charset", json('{"a":1}', "application/json; charset=utf-8")],
  ["a +json type", json('{"a":1}', "application/merge-patch+json")],
  ["whitespace", json("  \n ")],
  ["JSON null", json("null")],
  ["invalid JSON", json("{nope")],
  ["invalid UTF-8", json(Buffer.from([0x7b, 0x22, 0xc3, 0x22, 0x3a, 0x31, 0x7d]))],
  ["a latin1 charset", json("{}", "application/json; charset=latin1")],
  ["another type", json("hello", "text/plain")],
  ["no type", { headers: { "content-length": "5" }, body: "hello" }],
  ["exactly the limit", json(JSON.stringify({ a: "x".repeat(1024 - 8) }))],
  ["one byte over the limit", json(JSON.stringify({ a: "x".repeat(1024 - 7) }))],
  ["far over the limit", json(JSON.stringify({ a: "x".repeat(200_000) }))],
  ["a chunked body (express.raw reads it)", { headers: { "content-type": "application/json", "transfer-encoding": "chunked" }, body: '{"a":3}' }],
  ["an identity Content-Encoding (express.raw reads it)", { headers: { ...json('{"a":4}').headers, "content-encoding": "identity" }, body: '{"a":4}' }],
];

describe("the direct body reader answers as express.raw does", () => {
  it.each(cases)("%s", async (_name, { headers, body }) => {
    const expected = await send(viaRaw, headers, body);
    expect(await send(direct, headers, body)).toEqual(expected);
    // The connection goes on: the next request on it is read as usual.
    expect(await send(direct, json('{"next":1}').headers, '{"next":1}')).toEqual({ status: 200, body: '{"body":{"next":1},"absent":false,"tag":"ctx"}' });
  });

  it("keeps the request's async context for the steps after it", async () => {
    expect(JSON.parse((await send(direct, { ...json("{}").headers, "x-tag": "mine" }, "{}")).body).tag).toBe("mine");
  });
});

describe("byteLimit", () => {
  it.each([
    ["1mb", 1048576],
    ["2kb", 2048],
    ["1.5kb", 1536],
    ["1 MB", 1048576],
    ["100", 100],
    ["512b", 512],
    ["1gb", 1073741824],
  ])("reads %s as bytes.parse does: %d", (limit, bytes) => {
    expect(byteLimit(limit)).toBe(bytes);
  });

  it.each([" 2kb", "2tb", "-1kb", "lots", ""])("leaves %j to express.raw", (limit) => {
    expect(byteLimit(limit)).toBeUndefined();
  });
});
