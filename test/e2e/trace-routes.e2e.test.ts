import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MAX_SPANS_PER_LINK, MAX_SPANS_PER_TRACE } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import type { BodyOf } from "@intentmesh/sdk";
import { allEvents, createIntent, expectRejected, outcomeOf, TIMESTAMP, uniqueTag, UNKNOWN_ID } from "../support/e2e-helpers";

/**
 * Issue 31 part 2: RFC-0020 tracing at the paths and with the bodies of the official MCP server
 * (mcp-server/src/client.ts startTrace, getTrace, linkSpans), through the gateway and as MCP tools.
 */
let cluster: TestCluster;
const clients: Client[] = [];
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await cluster?.stop();
});

/** The MCP server's headers: its key and its configured agent id (the typed client acting as that agent). */
const mcpServer = (agentId: string) => cluster.sdk("agent", agentId);
type Span = BodyOf<"tracesLinkSpans">["spans"][number];
const startTrace = (intentId: string, agentId: string, extra: Partial<BodyOf<"tracesStart">> = {}) =>
  mcpServer(agentId).send("tracesStart", { intent_id: intentId, body: { trace_name: "research run", parent_trace_id: undefined, metadata: {}, started_by: agentId, ...extra } });
const linkSpans = (traceId: string, agentId: string, spans: Span[]) => mcpServer(agentId).send("tracesLinkSpans", { trace_id: traceId, body: { spans, linked_by: agentId } });
const getTrace = (intentId: string, traceId: string, agentId = "reader") => mcpServer(agentId).send("tracesGet", { intent_id: intentId, trace_id: traceId });
const span = (span_id: string, extra: Partial<Span> = {}): Span => ({ span_id, operation: `op ${span_id}`, ...extra });
describe("RFC-0020 tracing, as the official MCP server calls it", () => {
  it("starts a trace, joins the events that carry its trace_id, links spans and reads them back", async () => {
    const agent = uniqueTag("tracer");
    const intent = await createIntent(cluster, { status: "active" }, "agent");
    const started = await startTrace(intent.id, agent, { metadata: { model: "m1" } });
    expect(started.status).toBe(201);
    const traceId = started.data.trace_id;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(started.data).toEqual({
      trace_id: traceId,
      id: traceId,
      intent_id: intent.id,
      trace_name: "research run",
      parent_trace_id: null,
      metadata: { model: "m1" },
      started_by: agent,
      started_at: expect.stringMatching(TIMESTAMP),
      created_at: started.data.started_at,
      span_count: 0,
    });

    // An event appended with the trace's id joins it (RFC-0020: the event log is the trace's data).
    const logged = await mcpServer(agent).send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "tool_invocation", payload: { tool_name: "search" }, trace_id: traceId } });
    expect(logged.status).toBe(201);
    await mcpServer(agent).send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: {} } });

    const linked = await linkSpans(traceId, agent, [span("root", { status: "ok" }), span("child", { parent_span_id: "root" })]);
    expect(linked.status).toBe(200);
    expect(linked.data).toMatchObject({ trace_id: traceId, intent_id: intent.id, linked: 2, span_count: 2 });
    expect(linked.data.spans[1]).toEqual({ span_id: "child", trace_id: traceId, parent_span_id: "root", operation: "op child", status: null, linked_by: agent, linked_at: expect.stringMatching(TIMESTAMP) });

    const read = await getTrace(intent.id, traceId.toUpperCase());
    expect(read.status).toBe(200);
    expect(read.data).toMatchObject({ trace_id: traceId, span_count: 2, events_truncated: false });
    expect(read.data.spans.map((s) => s.span_id)).toEqual(["root", "child"]);
    // The trace's events: its start, the tool invocation, the link; not the event without the trace_id.
    expect(read.data.events.map((e) => e.event_type)).toEqual(["intent.trace_started", "tool_invocation", "intent.spans_linked"]);
    expect(read.data.events.every((e) => e.trace_id === traceId)).toBe(true);
    expect(read.data.events[2]!.payload).toEqual({ trace_id: traceId, span_ids: ["root", "child"], linked_by: agent, span_count: 2 });

    // The same events through the event log, as every client reads it.
    const log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => e.trace_id === traceId)).toHaveLength(3);
  });

  it("a link sent again is accepted and writes nothing; a changed span or a full trace refuses the whole link", async () => {
    const agent = uniqueTag("tracer");
    const intent = await createIntent(cluster, {}, "agent");
    const traceId = (await startTrace(intent.id, agent)).data.trace_id;
    expect((await linkSpans(traceId, agent, [span("a"), span("b")])).data.linked).toBe(2);
    const eventsBefore = (await allEvents(cluster, intent.id)).length;

    const again = await linkSpans(traceId, agent, [span("a"), span("b")]);
    expect(again.status).toBe(200);
    expect(again.data).toMatchObject({ linked: 0, span_count: 2 });
    const changed = await expectRejected(linkSpans(traceId, agent, [span("c"), span("a", { status: "error" })]), 409, "SPAN_CONFLICT");
    expect(changed.details).toMatchObject({ span_id: "a" });
    expect((await getTrace(intent.id, traceId)).data.span_count).toBe(2);
    expect(await allEvents(cluster, intent.id)).toHaveLength(eventsBefore);

    // Fill the trace to its limit, 100 spans a request; the next new span is refused, a repeat is not.
    let next = 2;
    while (next < MAX_SPANS_PER_TRACE) {
      const batch = Array.from({ length: Math.min(MAX_SPANS_PER_LINK, MAX_SPANS_PER_TRACE - next) }, (_, i) => span(`s${next + i}`));
      const res = await linkSpans(traceId, agent, batch);
      expect(res.status).toBe(200);
      next += batch.length;
    }
    const full = await expectRejected(linkSpans(traceId, agent, [span("b"), span("one-more")]), 409, "TRACE_FULL");
    expect(full.details).toMatchObject({ span_count: MAX_SPANS_PER_TRACE, limit: MAX_SPANS_PER_TRACE });
    expect((await linkSpans(traceId, agent, [span("b")])).status).toBe(200);
    const read = await getTrace(intent.id, traceId);
    expect(read.data.spans).toHaveLength(MAX_SPANS_PER_TRACE);
    expect(read.data.spans.map((s: { span_id: string }) => s.span_id).slice(0, 3)).toEqual(["a", "b", "s2"]);
  });

  it("concurrent links near the limit: the trace reaches its limit and never passes it", async () => {
    const intent = await createIntent(cluster, {}, "agent");
    const traceId = (await startTrace(intent.id, "tracer")).data.trace_id;
    const batch = (prefix: string) => Array.from({ length: MAX_SPANS_PER_LINK }, (_, i) => span(`${prefix}${i}`));
    for (let n = 0; n < MAX_SPANS_PER_TRACE - MAX_SPANS_PER_LINK; n += MAX_SPANS_PER_LINK) expect((await linkSpans(traceId, "tracer", batch(`f${n}-`))).status).toBe(200);
    const racing = await Promise.all(["x", "y", "z"].map((p) => outcomeOf(linkSpans(traceId, "tracer", batch(p)))));
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    for (const refused of racing.filter((r) => r.status === 409)) expect(refused.body).toMatchObject({ code: "TRACE_FULL" });
    const read = await getTrace(intent.id, traceId);
    expect(read.data.span_count).toBe(MAX_SPANS_PER_TRACE);
    expect(read.data.spans).toHaveLength(MAX_SPANS_PER_TRACE);
    expect(read.data.events.filter((e: { event_type: string }) => e.event_type === "intent.spans_linked")).toHaveLength(MAX_SPANS_PER_TRACE / MAX_SPANS_PER_LINK);
  });

  it("answers 404 for an unknown trace or intent, and for a trace read under another intent", async () => {
    const intent = await createIntent(cluster, {}, "agent");
    const other = await createIntent(cluster, {}, "agent");
    const traceId = (await startTrace(intent.id, "tracer")).data.trace_id;
    const unknown = "4bf92f3577b34da6a3ce929d0e0e4736";
    await expectRejected(getTrace(intent.id, unknown), 404, "TRACE_NOT_FOUND");
    await expectRejected(getTrace(other.id, traceId), 404, "TRACE_NOT_FOUND");
    await expectRejected(getTrace(UNKNOWN_ID, unknown), 404, "INTENT_NOT_FOUND");
    await expectRejected(linkSpans(unknown, "tracer", [span("a")]), 404, "TRACE_NOT_FOUND");
    await expectRejected(startTrace(UNKNOWN_ID, "tracer"), 404, "INTENT_NOT_FOUND");
  });

  it("registers a trace id the caller already propagates, once; a second start with it writes nothing", async () => {
    const intent = await createIntent(cluster, {}, "agent");
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const first = await startTrace(intent.id, "tracer", { trace_id: traceId.toUpperCase(), parent_trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" });
    expect(first.status).toBe(201);
    expect(first.data).toMatchObject({ trace_id: traceId, parent_trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" });
    const before = (await allEvents(cluster, intent.id)).length;
    await expectRejected(startTrace(intent.id, "tracer", { trace_id: traceId }), 409, "TRACE_EXISTS");
    expect(await allEvents(cluster, intent.id)).toHaveLength(before);
  });

  it("refuses hostile input with a 4xx and writes nothing", async () => {
    const intent = await createIntent(cluster, {}, "agent");
    const traceId = (await startTrace(intent.id, "tracer")).data.trace_id;
    const before = (await allEvents(cluster, intent.id)).length;
    // Raw where the types forbid the body (an unknown field, a span without operation or with an
    // extra field) or the path (an encoded slash, which the typed client would encode again).
    const raw = (path: string, body?: unknown) => cluster.api(path, { key: "agent", headers: { "X-Agent-ID": "tracer" }, body });
    const refusals: { status: number; body: unknown }[] = [
      await outcomeOf(startTrace(intent.id, "tracer", { trace_name: "" })),
      await outcomeOf(startTrace(intent.id, "tracer", { trace_name: "a\u0000b" })),
      await outcomeOf(startTrace(intent.id, "tracer", { trace_name: "x".repeat(257) })),
      await outcomeOf(startTrace(intent.id, "tracer", { metadata: { blob: "x".repeat(17 * 1024) } })),
      await outcomeOf(startTrace(intent.id, "tracer", { trace_id: "0".repeat(32) })),
      await outcomeOf(startTrace(intent.id, "tracer", { trace_id: "not-hex" })),
      await raw(`/intents/${intent.id}/traces`, { trace_name: "research run", metadata: {}, started_by: "tracer", unknown_field: 1 }),
      await outcomeOf(linkSpans(traceId, "tracer", [])),
      await outcomeOf(linkSpans(traceId, "tracer", [span("a"), span("a")])),
      await outcomeOf(linkSpans(traceId, "tracer", [span("a", { parent_span_id: "a" })])),
      await outcomeOf(linkSpans(traceId, "tracer", [span("has space")])),
      await raw(`/traces/${traceId}/spans`, { spans: [{ span_id: "a" }], linked_by: "tracer" }),
      await raw(`/traces/${traceId}/spans`, { spans: [{ ...span("a"), extra: true }], linked_by: "tracer" }),
      await outcomeOf(linkSpans(traceId, "tracer", Array.from({ length: MAX_SPANS_PER_LINK + 1 }, (_, i) => span(`s${i}`)))),
      await outcomeOf(mcpServer("tracer").send("tracesLinkSpans", { trace_id: "not-a-trace", body: { spans: [span("a")] } })),
      await raw(`/intents/${intent.id}/traces/..%2F..%2Fintents`),
    ];
    // Oversized metadata is the house's 413 VALUE_TOO_LARGE; a path that is no trace id is a 400 or no route.
    const TOO_LARGE = 3;
    refusals.forEach((res, i) => {
      const expected = i === TOO_LARGE ? [413] : i === refusals.length - 1 ? [400, 404] : [400];
      expect(expected, `refusal ${i}: ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
    });
    expect(refusals[TOO_LARGE]!.body).toMatchObject({ code: "VALUE_TOO_LARGE" });
    expect(await allEvents(cluster, intent.id)).toHaveLength(before);
    expect((await getTrace(intent.id, traceId)).data.span_count).toBe(0);
  });

  it("started_by and linked_by are labels, but never a registered agent of another key", async () => {
    const owned = uniqueTag("owned");
    expect((await cluster.sdk("other").send("agentsRegister", { body: { agent_id: owned } })).status).toBe(201);
    const intent = await createIntent(cluster, {}, "agent");
    const before = (await allEvents(cluster, intent.id)).length;
    const agentKey = cluster.sdk("agent");
    await expectRejected(agentKey.send("tracesStart", { intent_id: intent.id, body: { trace_name: "x", started_by: owned } }), 403, "AGENT_NOT_BOUND");
    const traceId = (await startTrace(intent.id, "tracer")).data.trace_id;
    await expectRejected(agentKey.send("tracesLinkSpans", { trace_id: traceId, body: { spans: [span("a")], linked_by: owned } }), 403, "AGENT_NOT_BOUND");
    expect(await allEvents(cluster, intent.id)).toHaveLength(before + 1);
    // A free label, and the default: the acting agent.
    expect((await agentKey.ops.tracesStart({ intent_id: intent.id, body: { trace_name: "x", started_by: "a-person" } })).started_by).toBe("a-person");
    expect((await cluster.sdk("agent", "actor-1").ops.tracesLinkSpans({ trace_id: traceId, body: { spans: [span("b")] } })).spans[0]!.linked_by).toBe("actor-1");
  });

  it("follows the intent's access-control list: another principal of a closed intent may neither start, read nor link", async () => {
    const intent = await createIntent(cluster, { acl: { default_policy: "closed" } }, "agent");
    const traceId = (await startTrace(intent.id, "owner")).data.trace_id;
    const outsider = cluster.sdk("other", uniqueTag("outsider"));
    await expectRejected(outsider.send("tracesStart", { intent_id: intent.id, body: { trace_name: "x" } }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(outsider.send("tracesGet", { intent_id: intent.id, trace_id: traceId }), 403, "INTENT_ACCESS_DENIED");
    await expectRejected(outsider.send("tracesLinkSpans", { trace_id: traceId, body: { spans: [span("a")] } }), 403, "INTENT_ACCESS_DENIED");
    expect((await getTrace(intent.id, traceId, "owner")).data.span_count).toBe(0);
  });

  it("works as MCP tools (tracesStart, tracesLinkSpans, tracesGet), with refusals as MCP errors carrying the code", async () => {
    const client = new Client({ name: "tracing-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp`), { requestInit: { headers: { "X-API-Key": TEST_KEYS.agent, "X-Agent-ID": "mcp-tracer" } } }));
    clients.push(client);
    const call = async (name: string, args: Record<string, unknown>) => {
      const reply = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: { text?: string }[]; structuredContent?: Record<string, any> };
      return { isError: reply.isError ?? false, body: JSON.parse(reply.content[0]!.text!) };
    };
    const intent = await createIntent(cluster, {}, "agent");
    const started = await call("tracesStart", { intent_id: intent.id, body: { trace_name: "via mcp", metadata: {}, started_by: "mcp-tracer" } });
    expect(started.isError, JSON.stringify(started.body)).toBe(false);
    const traceId = started.body.trace_id as string;
    const linked = await call("tracesLinkSpans", { trace_id: traceId, body: { spans: [span("x")], linked_by: "mcp-tracer" } });
    expect(linked).toMatchObject({ isError: false, body: { linked: 1 } });
    const read = await call("tracesGet", { intent_id: intent.id, trace_id: traceId });
    expect(read.body).toMatchObject({ trace_id: traceId, trace_name: "via mcp", started_by: "mcp-tracer", span_count: 1 });
    const refused = await call("tracesLinkSpans", { trace_id: traceId, body: { spans: [span("x", { status: "error" })] } });
    expect(refused).toMatchObject({ isError: true, body: { code: "SPAN_CONFLICT" } });
    // Hostile arguments are MCP errors with the catalogued code, and write nothing.
    expect(await call("tracesLinkSpans", { trace_id: "../../intents", body: { spans: [span("y")] } })).toMatchObject({ isError: true, body: { code: "VALIDATION_FAILED" } });
    expect(await call("tracesStart", { intent_id: intent.id, body: { trace_name: "" } })).toMatchObject({ isError: true, body: { code: "VALIDATION_FAILED" } });
    expect((await call("tracesGet", { intent_id: intent.id, trace_id: traceId })).body.span_count).toBe(1);
  });
});
