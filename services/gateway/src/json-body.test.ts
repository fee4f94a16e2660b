import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@intentmesh/telemetry";
import { errorHandler, jsonBody } from "./http";

// jsonBody reads a Content-Length: 0 body without waiting on the stream (the hot GET path); it
// must mean what reading it meant: {} and absent for a JSON type, its charset still checked, and
// no body at all for another type.
let server: http.Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.use(jsonBody("1kb"));
  app.all("/echo", (req, res) => void res.json({ body: req.body === undefined ? "(none)" : req.body, absent: Boolean(res.locals.bodyAbsent) }));
  app.use(errorHandler(createLogger("json-body-test", "silent")));
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A request with exactly the given headers (fetch would add or drop Content-Length itself). */
function send(method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/echo`, { method, headers }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("jsonBody with an empty body", () => {
  it("reads Content-Length: 0 with a JSON type as the absent body {}", async () => {
    for (const method of ["GET", "POST", "DELETE"]) {
      expect(await send(method, { "content-type": "application/json", "content-length": "0" })).toEqual({ status: 200, json: { body: {}, absent: true } });
    }
  });

  it("still refuses a charset other than UTF-8 on an empty JSON body", async () => {
    const res = await send("POST", { "content-type": "application/json; charset=latin1", "content-length": "0" });
    expect(res.status).toBe(415);
    expect(res.json.code).toBe("UNSUPPORTED_ENCODING");
  });

  it("leaves an empty body of another type unread, as before", async () => {
    expect(await send("POST", { "content-type": "text/plain", "content-length": "0" })).toEqual({ status: 200, json: { body: "(none)", absent: false } });
    expect(await send("GET", { "content-length": "0" })).toEqual({ status: 200, json: { body: "(none)", absent: false } });
  });

  it("reads no body where neither Content-Length nor Transfer-Encoding announces one, whatever the type (as body-parser does)", async () => {
    // (node's client sends Content-Length: 0 on a bodiless POST; GET, DELETE and OPTIONS go without)
    for (const method of ["GET", "DELETE", "OPTIONS"]) {
      expect(await send(method, { "content-type": "application/json" })).toEqual({ status: 200, json: { body: "(none)", absent: false } });
      expect(await send(method, {})).toEqual({ status: 200, json: { body: "(none)", absent: false } });
    }
  });

  it("reads a chunked body", async () => {
    expect(await send("POST", { "content-type": "application/json", "transfer-encoding": "chunked" }, '{"a":2}')).toEqual({ status: 200, json: { body: { a: 2 }, absent: false } });
  });

  it("reads a body that is there", async () => {
    const body = JSON.stringify({ a: 1 });
    expect(await send("POST", { "content-type": "application/json", "content-length": String(body.length) }, body)).toEqual({ status: 200, json: { body: { a: 1 }, absent: false } });
  });
});
