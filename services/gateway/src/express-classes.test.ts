import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterAll, beforeAll, expect, it } from "vitest";
import { expressServerClasses } from "./express-classes";

// A server made with expressServerClasses hands express requests and responses that already
// have its prototypes, and express works on them as on Node's own (headers, json, status, a
// second request on the same connection).
let server: http.Server;
let base: string;
const seen: { request: boolean; response: boolean }[] = [];

beforeAll(async () => {
  const app = express();
  app.get("/echo/:name", (req, res) => void res.status(201).set("X-Name", req.params.name).json({ agent: req.get("x-agent"), query: req.query }));
  // What Node made, before express sets any prototype itself.
  server = http.createServer(expressServerClasses(app), (req, res) => {
    seen.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response });
    app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it("makes requests and responses with express's prototypes, which express serves as usual", async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<{ status: number; name: string | undefined; body: unknown }>((resolve, reject) => {
      http
        .get(`${base}${path}`, { agent, headers: { "X-Agent": "a-1" } }, (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode!, name: res.headers["x-name"] as string | undefined, body: JSON.parse(text) }));
        })
        .on("error", reject);
    });
  expect(await get("/echo/one?x=1")).toEqual({ status: 201, name: "one", body: { agent: "a-1", query: { x: "1" } } });
  expect(await get("/echo/two")).toEqual({ status: 201, name: "two", body: { agent: "a-1", query: {} } });
  agent.destroy();
  expect(seen).toEqual([
    { request: true, response: true },
    { request: true, response: true },
  ]);
});
