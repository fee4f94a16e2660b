import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIMITS } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";

/**
 * Issue 9, the cases found by the probes, each through the gateway: sizes are limited where data
 * enters (413 naming the limit, nothing written), lists page by bytes, one intent has one id
 * spelling, and malformed values are 400s with their own codes.
 */
describe("hostile input through the gateway", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startTestCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const raw = (path: string, body: string, headers: Record<string, string> = {}) =>
    cluster.api(path, { rawBody: body, headers: { "Content-Type": "application/json", ...headers } });
  const newIntent = async (extra: Record<string, unknown> = {}) => {
    const res = await cluster.api("/intents", { body: { title: "target", status: "active", ...extra } });
    expect(res.status).toBe(201);
    return res.body as { id: string; version: number };
  };

  it("state patches that would pass the state limit are 413 STATE_TOO_LARGE, the intent unchanged and readable", async () => {
    const intent = await newIntent();
    const big = "x".repeat(150 * 1024);
    const first = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a", value: big }], headers: { "If-Match": "1" } });
    expect(first.status).toBe(200);
    const second = await cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/b", value: big }], headers: { "If-Match": "2" } });
    expect(second.status).toBe(413);
    expect(second.body).toMatchObject({ code: "STATE_TOO_LARGE", details: { limit_bytes: LIMITS.stateBytes } });
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.status).toBe(200);
    expect(read.body.version).toBe(2);
    expect(read.body.state.b).toBeUndefined();
    const events = await cluster.api(`/intents/${intent.id}/events`);
    expect(events.status).toBe(200);
  });

  it("one request's patches past the state limit are 413 VALUE_TOO_LARGE before anything is read", async () => {
    const intent = await newIntent();
    const patches = Array.from({ length: 5 }, (_, i) => ({ op: "set", path: `/k${i}`, value: "y".repeat(60 * 1024) }));
    const res = await cluster.api(`/intents/${intent.id}/state`, { body: patches, headers: { "If-Match": "1" } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: "VALUE_TOO_LARGE", details: { limit_bytes: LIMITS.stateBytes } });
  });

  it("an event payload over the field limit is 413 and not logged", async () => {
    const intent = await newIntent();
    const res = await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "big", payload: { blob: "z".repeat(LIMITS.jsonFieldBytes) } } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: "VALUE_TOO_LARGE", details: { path: "body.payload", limit_bytes: LIMITS.jsonFieldBytes } });
    const events = await cluster.api(`/intents/${intent.id}/events?event_type=big`);
    expect(events.body.events).toHaveLength(0);
  });

  it("a body just under the HTTP limit that the bus cannot carry is 413, not 503", async () => {
    const intent = await newIntent();
    const body = JSON.stringify({ event_type: "huge", payload: { blob: "w".repeat(1024 * 1024 - 200) } });
    const res = await raw(`/intents/${intent.id}/events`, body);
    expect(res.status).toBe(413);
    expect(res.body.code).toMatch(/TOO_LARGE/);
  });

  it("the events list pages by bytes: large events come in several pages, each within the page limit", async () => {
    const intent = await newIntent();
    const payload = { blob: "p".repeat(60 * 1024) };
    for (let i = 0; i < 12; i++) expect((await cluster.api(`/intents/${intent.id}/events`, { body: { event_type: "chunk", payload } })).status).toBe(201);
    const seen: number[] = [];
    let after = "0";
    for (let pages = 0; pages < 10; pages++) {
      const res = await fetch(`${cluster.baseUrl}/api/v1/intents/${intent.id}/events?after=${after}&limit=1000`, { headers: { "X-API-Key": TEST_KEYS.admin } });
      const text = await res.text();
      expect(Buffer.byteLength(text)).toBeLessThan(LIMITS.pageBytes + 4096);
      const page = JSON.parse(text);
      seen.push(...page.events.map((e: { sequence: number }) => e.sequence));
      if (!page.has_more) break;
      after = page.next_cursor;
    }
    expect(seen).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    // The typed-filter path and the tail path page by bytes as well.
    const typed = await cluster.api(`/intents/${intent.id}/events?event_type=chunk&limit=1000`);
    expect(typed.body.has_more).toBe(true);
    expect(typed.body.events.length).toBeLessThan(12);
  });

  it("an upper-case UUID is the same intent: same row, same stream", async () => {
    const intent = await newIntent();
    const upper = intent.id.toUpperCase();
    const sse = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, { "X-API-Key": TEST_KEYS.admin });
    const read = await cluster.api(`/intents/${upper}`);
    expect(read.status).toBe(200);
    expect(read.body.id).toBe(intent.id);
    const appended = await cluster.api(`/intents/${upper}/events`, { body: { event_type: "via-upper-case" } });
    expect(appended.status).toBe(201);
    expect(appended.body.intent_id).toBe(intent.id);
    await sse.waitFor((c) => c.frames.some((f) => f.event === "via-upper-case"));
    await sse.close();
    const portfolio = await cluster.api("/portfolios", { body: { name: "p" } });
    const added = await cluster.api(`/portfolios/${portfolio.body.id}/intents`, { body: { intent_id: upper }, headers: { "If-Match": String(portfolio.body.version) } });
    expect(added.status).toBeLessThan(300);
    const members = await cluster.api(`/portfolios/${portfolio.body.id.toUpperCase()}`);
    expect(members.body.members.map((m: { intent_id: string }) => m.intent_id)).toEqual([intent.id]);
  });

  it.each([
    ["a NUL in a string", '{"title":"a\\u0000b"}', "NUL_CHARACTER", "/title"],
    ["a NUL in a key of free-form JSON", '{"title":"t","state":{"k\\u0000":1}}', "NUL_CHARACTER", "/state/k\u0000"],
    ["a lone surrogate", '{"title":"\\ud800"}', "LONE_SURROGATE", "/title"],
    ["a number past a double", '{"title":"t","confidence":1e309}', "NUMBER_NOT_REPRESENTABLE", undefined],
    ["-0", '{"title":"t","state":{"n":-0}}', "NUMBER_NOT_REPRESENTABLE", undefined],
    ["an integer past 2^53", '{"title":"t","state":{"n":9007199254740993}}', "NUMBER_NOT_REPRESENTABLE", undefined],
    ["10,000 levels of nesting", `{"title":"t","state":{"d":${"[".repeat(10_000)}${"]".repeat(10_000)}}}`, "JSON_TOO_DEEP", undefined],
  ])("refuses %s with 400 and its code, creating nothing", async (_name, body, code, path) => {
    const before = await cluster.api("/intents?limit=500");
    const res = await raw("/intents", body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(code);
    if (path) expect(res.body.details.path).toBe(path);
    const after = await cluster.api("/intents?limit=500");
    expect(after.body.intents.length).toBe(before.body.intents.length);
  });

  it("refuses invalid UTF-8 bytes (no silent U+FFFD)", async () => {
    const res = await fetch(`${cluster.baseUrl}/api/v1/intents`, {
      method: "POST",
      headers: { "X-API-Key": TEST_KEYS.admin, "Content-Type": "application/json" },
      body: Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("INVALID_UTF8");
  });

  it("refuses NUL in a query string and in a path id", async () => {
    const query = await cluster.api("/intents?created_by=a%00b");
    expect(query.status).toBe(400);
    expect(query.body.code).toBe("NUL_CHARACTER");
    const agent = await cluster.api("/agents/a%00b");
    expect(agent.status).toBe(400);
    expect(agent.body.code).toBe("NUL_CHARACTER");
  });

  it("refuses integers past the column type (2^31) with 400 naming the field", async () => {
    const res = await cluster.api("/agents", { key: "agent", body: { agent_id: "int-probe", capacity: { max_concurrent_tasks: 2 ** 31 } } });
    expect(res.status).toBe(400);
    expect(res.body.details.issues[0].path).toBe("body.capacity.max_concurrent_tasks");
    const listed = await cluster.api("/agents?min_available_capacity=9223372036854775808");
    expect(listed.status).toBe(400);
  });

  it("refuses a JSON pointer with an invalid escape (~2) with 400, with or without leases on the intent", async () => {
    const intent = await newIntent();
    const patch = (version: number) => cluster.api(`/intents/${intent.id}/state`, { body: [{ op: "set", path: "/a~2b", value: 1 }], headers: { "If-Match": String(version) } });
    expect((await patch(1)).status).toBe(400);
    await cluster.api("/agents", { key: "agent", body: { agent_id: "pointer-agent" } });
    const lease = await cluster.api(`/intents/${intent.id}/leases`, { key: "agent", headers: { "X-Agent-ID": "pointer-agent" }, body: { scope: "a", ttl_seconds: 60 } });
    expect(lease.status).toBe(201);
    const res = await patch(1);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("VALIDATION_FAILED");
  });
});
