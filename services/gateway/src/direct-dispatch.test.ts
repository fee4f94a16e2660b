import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import express, { type NextFunction, type Request, type Response } from "express";
import { directDispatch, type DirectRoute } from "./direct-dispatch";
import { compileRouteTable } from "./route-table";

// The direct path in front of a small express app: what it serves, it serves with express's
// request and response (req.get, req.query with the app's parser, res.json, res.locals), the
// steps in order, errors to the error handler; what it does not match, express serves.
let server: http.Server;
let base: string;
const seen: string[] = [];

beforeAll(async () => {
  const app = express();
  app.set("query parser", "simple");
  app.set("etag", false);
  const step = (name: string) => (_req: Request, _res: Response, next: NextFunction) => {
    seen.push(name);
    next();
  };
  const steps = [step("first"), step("second")];
  const routes: Record<string, DirectRoute> = {
    echo: {
      expressRoute: { path: "/:id" },
      checkParams: (req) => {
        seen.push(`params ${String((req as { route?: { path: string } }).route?.path)} ${req.baseUrl}`);
        if (req.params.id === "bad") throw Object.assign(new Error("bad id"), { status: 404 });
        req.params.id = String(req.params.id).toLowerCase();
      },
      handler: (req, res) => {
        seen.push("handler");
        res.locals.seen = true;
        res.set("X-Agent", req.get("x-agent") ?? "none").json({ params: req.params, query: req.query, originalUrl: req.originalUrl, locals: res.locals.seen, fromApp: req.app === app });
      },
    },
    rejects: { expressRoute: { path: "/rejects" }, checkParams: () => undefined, handler: async () => Promise.reject(Object.assign(new Error("no"), { status: 409 })) },
  };
  const table = compileRouteTable(["/v1"], [
    { method: "get", path: "/things/rejects", value: routes.rejects! },
    { method: "get", path: "/things/{id}", value: routes.echo! },
  ]);
  const onError = (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    seen.push("error");
    res.status((error as { status?: number }).status ?? 500).json({ error: (error as Error).message });
  };
  for (const s of steps) app.use(s);
  app.use((req, res) => void res.status(404).json({ express: req.originalUrl }));
  app.use(onError);
  const dispatch = directDispatch(app, table, steps, onError);
  server = http.createServer((req, res) => void (dispatch(req, res) || app(req, res)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("directDispatch", () => {
  it("serves a matched route with express's request and response, the steps first, in order", async () => {
    seen.length = 0;
    const res = await fetch(`${base}/v1/things/ABC?a=1&a=2&b=x`, { headers: { "X-Agent": "007" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-agent")).toBe("007");
    expect(await res.json()).toEqual({ params: { id: "abc" }, query: { a: ["1", "2"], b: "x" }, originalUrl: "/v1/things/ABC?a=1&a=2&b=x", locals: true, fromApp: true });
    expect(seen).toEqual(["first", "second", "params /:id /v1/things", "handler"]);
  });

  it("sends a parameter check's error and a handler's rejected promise to the error handler", async () => {
    seen.length = 0;
    const bad = await fetch(`${base}/v1/things/bad`);
    expect(bad.status).toBe(404);
    expect(await bad.json()).toEqual({ error: "bad id" });
    expect(seen).toEqual(["first", "second", "params /:id /v1/things", "error"]);
    const rejects = await fetch(`${base}/v1/things/rejects`);
    expect(rejects.status).toBe(409);
    expect(await rejects.json()).toEqual({ error: "no" });
  });

  it("leaves what the table does not match to express", async () => {
    seen.length = 0;
    const res = await fetch(`${base}/v1/things/a/b`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ express: "/v1/things/a/b" });
    expect(seen).toEqual(["first", "second"]);
  });
});
