import http from "node:http";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@intentmesh/telemetry";
import { startTestCluster, startTestGateway, TEST_KEYS, type TestCluster } from "../support/cluster";
import type { Gateway } from "../../services/gateway/src/app";
import { createIntent, UNKNOWN_ID } from "../support/e2e-helpers";

/**
 * Issue 32: the gateway serves the catalogue's routes from a dispatch table in front of express
 * (route-table.ts, direct-dispatch.ts). Two gateways on the same cluster, one with the direct path
 * and one with every request through express's router (directRoutes: false), must answer the same
 * requests the same way: status, headers and body, for the odd spellings of paths and bodies too.
 */
let cluster: TestCluster;
let direct: { gateway: Gateway; baseUrl: string };
let viaExpress: { gateway: Gateway; baseUrl: string };
let intentId: string;
const ORIGIN = "https://app.example.org";
/** Each gateway's log lines: the access log's route label and status must be the same too. */
const directLog: Record<string, unknown>[] = [];
const expressLog: Record<string, unknown>[] = [];
const logTo = (lines: Record<string, unknown>[]) => ({ write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });

beforeAll(async () => {
  cluster = await startTestCluster();
  const options = { corsOrigins: [ORIGIN], bodyLimit: "2kb" };
  direct = await startTestGateway(cluster.bus, createLogger("direct", "info", logTo(directLog)), options);
  viaExpress = await startTestGateway(cluster.bus, createLogger("express", "info", logTo(expressLog)), { ...options, directRoutes: false });
  intentId = (await createIntent(cluster)).id;
});
afterAll(async () => {
  await direct?.gateway.stop();
  await viaExpress?.gateway.stop();
  await cluster?.stop();
});

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** An SSE stream: compare the status and headers, then hang up. */
  stream?: boolean;
}

/** The access log's lines without what differs between two requests (duration, time, service). */
const accessLines = (lines: Record<string, unknown>[]) =>
  lines.filter((line) => line.msg === "request").map(({ method, route, status, principal, agent_id, request_id, level }) => ({ method, route, status, principal, agent_id, request_id, level }));

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Raw HTTP (no URL normalisation, unlike fetch): the path goes out exactly as written. */
function send(baseUrl: string, sent: Sent): Promise<Answer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers = { "X-Request-Id": "direct-routes-test", ...sent.headers };
    const request = http.request({ host: hostname, port, method: sent.method, path: sent.path, headers }, (res) => {
      const answer = (body: string): Answer => {
        const { date: _date, connection: _connection, "keep-alive": _keepAlive, ...rest } = res.headers;
        return { status: res.statusCode!, headers: rest, body };
      };
      if (sent.stream) {
        resolve(answer(""));
        request.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve(answer(Buffer.concat(chunks).toString("utf8"))));
    });
    request.on("error", reject);
    request.end(sent.body);
  });
}

const key = { "X-API-Key": TEST_KEYS.admin };
const json = { ...key, "Content-Type": "application/json" };
const upperId = () => intentId.toUpperCase();
/** The id with its first character percent-encoded: the same id once decoded. */
const encodedId = () => `%${intentId.charCodeAt(0).toString(16)}${intentId.slice(1)}`;

const cases: [string, () => Sent][] = [
  ["a plain GET", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: key })],
  ["the other prefix", () => ({ method: "GET", path: `/v1/intents/${intentId}`, headers: key })],
  ["a non-canonical (upper-case) UUID", () => ({ method: "GET", path: `/api/v1/intents/${upperId()}`, headers: key })],
  ["a percent-encoded segment", () => ({ method: "GET", path: `/api/v1/intents/${encodedId()}`, headers: key })],
  ["a NUL in a path parameter", () => ({ method: "GET", path: "/api/v1/agents/a%00b", headers: key })],
  ["an encoded slash in a path parameter", () => ({ method: "GET", path: "/api/v1/agents/a%2Fb", headers: key })],
  ["a malformed percent escape", () => ({ method: "GET", path: "/api/v1/intents/%zz", headers: key })],
  ["a malformed escape where the route has a literal", () => ({ method: "GET", path: `/api/v1/intents/${intentId}/ev%zznts`, headers: key })],
  ["a path id that is no UUID", () => ({ method: "GET", path: "/api/v1/intents/not-a-uuid", headers: key })],
  ["an unknown UUID", () => ({ method: "GET", path: `/api/v1/intents/${UNKNOWN_ID}`, headers: key })],
  ["a trailing slash", () => ({ method: "GET", path: `/api/v1/intents/${intentId}/`, headers: key })],
  ["a trailing slash on a list", () => ({ method: "GET", path: "/api/v1/intents/?limit=1", headers: key })],
  ["two trailing slashes", () => ({ method: "GET", path: `/api/v1/intents/${intentId}//`, headers: key })],
  ["an empty segment", () => ({ method: "GET", path: `/api/v1//intents/${intentId}`, headers: key })],
  ["another letter case", () => ({ method: "GET", path: `/API/V1/Intents/${intentId}/EVENTS`, headers: key })],
  ["HEAD on a GET route", () => ({ method: "HEAD", path: `/api/v1/intents/${intentId}`, headers: key })],
  ["HEAD on a list", () => ({ method: "HEAD", path: "/api/v1/intents?limit=1", headers: key })],
  ["a method no route of the path has", () => ({ method: "PUT", path: "/api/v1/intents", headers: json, body: "{}" })],
  ["OPTIONS without CORS preflight", () => ({ method: "OPTIONS", path: "/api/v1/intents", headers: key })],
  ["a CORS preflight", () => ({ method: "OPTIONS", path: "/api/v1/intents", headers: { Origin: ORIGIN, "Access-Control-Request-Method": "POST" } })],
  ["a CORS request", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: { ...key, Origin: ORIGIN } })],
  ["a CORS request from another origin", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: { ...key, Origin: "https://elsewhere.example" } })],
  ["an unknown path", () => ({ method: "GET", path: "/api/v1/nothing/here", headers: key })],
  ["an unknown path without a key", () => ({ method: "GET", path: "/api/v1/nothing/here" })],
  ["no key", () => ({ method: "GET", path: `/api/v1/intents/${intentId}` })],
  ["an unknown key", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: { "X-API-Key": "not-a-valid-key-000000000000000" } })],
  ["a bad X-Agent-ID", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: { ...key, "X-Agent-ID": "*" } })],
  ["a role the route refuses", () => ({ method: "GET", path: "/api/v1/intents?limit=1", headers: { "X-API-Key": TEST_KEYS.federation } })],
  ["a query with paging", () => ({ method: "GET", path: "/api/v1/intents?limit=1&status=active", headers: key })],
  ["a repeated query parameter", () => ({ method: "GET", path: "/api/v1/intents?limit=1&limit=2", headers: key })],
  ["an unsafe query value", () => ({ method: "GET", path: "/api/v1/intents?title=%00", headers: key })],
  ["If-None-Match", () => ({ method: "GET", path: `/api/v1/intents/${intentId}`, headers: { ...key, "If-None-Match": '"1"' } })],
  ["invalid JSON", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: "{nope" })],
  ["JSON null", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: "null" })],
  ["an empty JSON body", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...json, "Content-Length": "0" } })],
  ["whitespace as the body", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: "  \n" })],
  ["a body that is not JSON", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...key, "Content-Type": "text/plain" }, body: "hello" })],
  ["a body without a type", () => ({ method: "POST", path: "/api/v1/intents", headers: key, body: "hello" })],
  ["a latin1 charset", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...key, "Content-Type": "application/json; charset=latin1" }, body: "{}" })],
  ["invalid UTF-8", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) })],
  ["a body over the limit", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: JSON.stringify({ title: "x".repeat(4000) }) })],
  ["a gzip body", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...json, "Content-Encoding": "gzip" }, body: zlib.gzipSync(JSON.stringify({ title: 5 })) })],
  ["a deflate body", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...json, "Content-Encoding": "deflate" }, body: zlib.deflateSync(JSON.stringify({ title: 5 })) })],
  ["a broken gzip body", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...json, "Content-Encoding": "gzip" }, body: "not gzip" })],
  ["an unsupported encoding", () => ({ method: "POST", path: "/api/v1/intents", headers: { ...json, "Content-Encoding": "compress" }, body: "{}" })],
  ["an invalid body", () => ({ method: "POST", path: "/api/v1/intents", headers: json, body: JSON.stringify({ title: 5 }) })],
  ["a stale If-Match", () => ({ method: "POST", path: `/api/v1/intents/${intentId}/events`, headers: { ...json, "If-Match": '"99"' }, body: JSON.stringify({ event_type: "x.y", payload: {} }) })],
  ["a malformed If-Match", () => ({ method: "POST", path: `/api/v1/intents/${intentId}/events`, headers: { ...json, "If-Match": "nope" }, body: JSON.stringify({ event_type: "x.y", payload: {} }) })],
  ["a federation route in front of the catalogue", () => ({ method: "POST", path: "/api/v1/federation/receive", headers: json, body: "{}" })],
  ["/server/config", () => ({ method: "GET", path: "/api/v1/server/config" })],
  ["a catalogue route of the federation group", () => ({ method: "GET", path: "/api/v1/federation/status", headers: key })],
  ["the SSE stream of an intent", () => ({ method: "GET", path: `/api/v1/subscribe/intents/${intentId}`, headers: key, stream: true })],
  ["the SSE stream at the clients' path", () => ({ method: "GET", path: `/api/v1/intents/${intentId}/subscribe`, headers: key, stream: true })],
  ["the SSE stream of an unknown id", () => ({ method: "GET", path: "/api/v1/subscribe/intents/not-a-uuid", headers: key })],
  ["MCP tools/list", () => ({ method: "POST", path: "/mcp", headers: { ...json, Accept: "application/json, text/event-stream" }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' })],
  ["MCP GET", () => ({ method: "GET", path: "/mcp", headers: key })],
  ["the root", () => ({ method: "GET", path: "/" })],
  ["the console's session", () => ({ method: "GET", path: "/console/session", headers: key })],
  ["/healthz", () => ({ method: "GET", path: "/healthz" })],
  ["the prefix alone", () => ({ method: "GET", path: "/api/v1", headers: key })],
];

describe("the direct path answers as express does (issue 32)", () => {
  it.each(cases)("%s", async (_name, request) => {
    const sent = request();
    directLog.length = expressLog.length = 0;
    const fromExpress = await send(viaExpress.baseUrl, sent);
    const fromDirect = await send(direct.baseUrl, sent);
    expect(fromDirect).toEqual(fromExpress);
    if (sent.stream) return;
    // The access log is written when the response finishes, which the client may see first (a
    // CORS preflight, answered before the access log's middleware, has no line at all).
    for (let i = 0; i < 20 && !(accessLines(directLog).length && accessLines(expressLog).length); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(accessLines(directLog)).toEqual(accessLines(expressLog));
    expect(directLog.filter((line) => line.msg !== "request").map((line) => line.msg)).toEqual(expressLog.filter((line) => line.msg !== "request").map((line) => line.msg));
  });

  it("serves HEAD with the GET route's headers and no body, and a non-canonical id as the canonical one", async () => {
    const head = await send(direct.baseUrl, { method: "HEAD", path: `/api/v1/intents/${intentId}`, headers: key });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers.etag).toBe('"1"');
    for (const path of [`/api/v1/intents/${upperId()}`, `/api/v1/intents/${encodedId()}`, `/v1/INTENTS/${intentId}/`]) {
      const read = await send(direct.baseUrl, { method: "GET", path, headers: key });
      expect(read.status, path).toBe(200);
      expect(JSON.parse(read.body).id, path).toBe(intentId);
    }
  });

  it("creates the same way", async () => {
    const create = (baseUrl: string) => send(baseUrl, { method: "POST", path: "/api/v1/intents", headers: json, body: JSON.stringify({ title: "direct", status: "active" }) });
    const [a, b] = [await create(viaExpress.baseUrl), await create(direct.baseUrl)];
    expect(b.status).toBe(a.status);
    expect(Object.keys(JSON.parse(b.body)).sort()).toEqual(Object.keys(JSON.parse(a.body)).sort());
    expect(Object.keys(b.headers).sort()).toEqual(Object.keys(a.headers).sort());
  });
});
