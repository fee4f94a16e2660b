import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fs from "node:fs";
import { createLogger } from "@intentmesh/telemetry";
import { startTestCluster, startTestGateway, TEST_KEYS, type TestCluster } from "../support/cluster";
import { parseCorsOrigins } from "../../services/gateway/src/cors";
import { gatewayConfigSchema } from "../../services/gateway/src/config";
import type { Gateway } from "../../services/gateway/src/app";

/** Issue 17 point 6: CORS (off by default), GET / with links, a LICENSE. */
let cluster: TestCluster;
let withCors: { gateway: Gateway; baseUrl: string };
beforeAll(async () => {
  cluster = await startTestCluster();
  withCors = await startTestGateway(cluster.bus, createLogger("cors", "silent"), { corsOrigins: ["https://app.example.org"] });
});
afterAll(async () => {
  await withCors?.gateway.stop();
  await cluster?.stop();
});

const preflight = (baseUrl: string, origin: string) =>
  fetch(`${baseUrl}/api/v1/intents`, { method: "OPTIONS", headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key,content-type" } });

describe("CORS", () => {
  it("is off by default: no allow header, and a preflight is not answered as one", async () => {
    const res = await preflight(cluster.baseUrl, "https://app.example.org");
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    const get = await fetch(`${cluster.baseUrl}/api/v1/intents`, { headers: { Origin: "https://app.example.org", "X-API-Key": TEST_KEYS.admin } });
    expect(get.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("with CORS_ORIGINS, answers a preflight from an allowed origin before any key, and marks responses; other origins get nothing", async () => {
    const res = await preflight(withCors.baseUrl, "https://app.example.org");
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.org");
    expect(res.headers.get("access-control-allow-headers")).toContain("X-API-Key");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    const get = await fetch(`${withCors.baseUrl}/api/v1/intents`, { headers: { Origin: "https://app.example.org", "X-API-Key": TEST_KEYS.admin } });
    expect(get.status).toBe(200);
    expect(get.headers.get("access-control-allow-origin")).toBe("https://app.example.org");
    expect(get.headers.get("access-control-expose-headers")).toContain("ETag");
    expect(get.headers.get("vary")).toContain("Origin");
    const other = await preflight(withCors.baseUrl, "https://evil.example");
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect(other.status).not.toBe(204);
  });

  it("reads CORS_ORIGINS strictly", () => {
    expect(parseCorsOrigins(undefined)).toEqual([]);
    expect(parseCorsOrigins(" https://a.example , http://b.example:3000 ")).toEqual(["https://a.example", "http://b.example:3000"]);
    expect(gatewayConfigSchema.safeParse({ CORS_ORIGINS: "*" }).success).toBe(true);
    expect(gatewayConfigSchema.safeParse({ CORS_ORIGINS: "https://a.example/path" }).success).toBe(false);
    expect(gatewayConfigSchema.safeParse({ CORS_ORIGINS: "javascript:alert(1)" }).success).toBe(false);
  });
});

describe("GET / and the license", () => {
  it("answers the root with links to the docs, the OpenAPI document and the discovery document, without a key", async () => {
    const res = await fetch(`${cluster.baseUrl}/`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, string>;
    expect(body).toMatchObject({ name: "intentmesh", api: "/api/v1", docs: "/docs", openapi: "/openapi.json", discovery: "/.well-known/openintent.json" });
    for (const link of [body.docs, body.openapi, body.discovery]) expect((await fetch(`${cluster.baseUrl}${link}`)).status).toBe(200);
  });

  it("ships the Apache-2.0 license text", () => {
    const text = fs.readFileSync(new URL("../../LICENSE", import.meta.url), "utf8");
    expect(text).toContain("Apache License");
    expect(text).toContain("Version 2.0, January 2004");
    expect(text).toContain("END OF TERMS AND CONDITIONS");
  });
});
