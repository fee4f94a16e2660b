import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { apiRoutes, routeAdmits } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, UNKNOWN_ID } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";

/**
 * Issue 31 part 1: the gateway's MCP endpoint, driven by the official MCP SDK client over
 * Streamable HTTP, as a desktop MCP client would: tools derived from the route catalogue, each
 * call run by its route (roles, validation, the services' rules), refusals as tool errors
 * carrying the catalogued code, resources for intents and their event logs.
 */
let cluster: TestCluster;
const clients: Client[] = [];
const logLines: string[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ logDestination: { write: (line) => void logLines.push(line) } });
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await cluster?.stop();
});

async function connect(key: keyof typeof TEST_KEYS | null, headers: Record<string, string> = {}, path = "/mcp"): Promise<Client> {
  const client = new Client({ name: "intentmesh-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}${path}`), {
    requestInit: { headers: { ...(key ? { "X-API-Key": TEST_KEYS[key] } : {}), ...headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

interface ToolReply {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
}

const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as ToolReply;

/** A success: the route's JSON body (text content, and structured content when it is an object). */
async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const reply = await call(client, name, args);
  expect(reply.isError, `${name}: ${reply.content[0]?.text}`).toBeFalsy();
  const body = JSON.parse(reply.content[0]!.text!);
  if (body && typeof body === "object" && !Array.isArray(body)) expect(reply.structuredContent).toEqual(body);
  return body;
}

/** A refusal: a tool error whose structured content is the catalogued error body. */
async function refused(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<Record<string, any>> {
  const reply = await call(client, name, args);
  expect(reply.isError, `${name} should be refused with ${code}: ${reply.content[0]?.text}`).toBe(true);
  expect(reply.structuredContent?.code).toBe(code);
  expect(typeof reply.structuredContent?.message).toBe("string");
  expect(JSON.parse(reply.content[0]!.text!).code).toBe(code);
  return reply.structuredContent!;
}

describe("MCP endpoint (issue 31)", () => {
  it("lists one tool per operation the key may call, with JSON Schema inputs; the server names itself", async () => {
    const admin = await connect("admin");
    expect(admin.getServerVersion()).toMatchObject({ name: "intentmesh" });
    const { tools } = await admin.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(apiRoutes.filter((route) => routeAdmits(route, ["admin"])).map((route) => route.operationId).sort());
    const patch = tools.find((tool) => tool.name === "intentsPatchState")!;
    expect(patch.inputSchema).toMatchObject({ type: "object", required: ["intent_id", "body", "if_match"] });
    expect(patch.description).toContain("POST /api/v1/intents/{intent_id}/state");
    expect(tools.find((tool) => tool.name === "intentsGet")!.annotations).toMatchObject({ readOnlyHint: true });

    // An agent key does not see what it may not call.
    const agent = await connect("agent");
    const agentTools = (await agent.listTools()).tools.map((tool) => tool.name);
    expect(agentTools).toContain("tasksClaim");
    expect(agentTools).not.toContain("governanceApprove");
    expect(agentTools).toEqual(apiRoutes.filter((route) => routeAdmits(route, ["agent"])).map((route) => route.operationId));
  });

  it("?tools= narrows tools/list to groups of the catalogue; calls are not narrowed; an unknown group is refused", async () => {
    const narrow = await connect("agent", {}, "/mcp?tools=intents,Tasks");
    const names = (await narrow.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(apiRoutes.filter((route) => ["Intents", "Tasks"].includes(route.tag) && routeAdmits(route, ["agent"])).map((route) => route.operationId));
    expect(names).toContain("intentsPatchState");
    expect(names).not.toContain("channelsSend");
    const intent = await createIntent(cluster);
    expect(await ok(narrow, "governanceListApprovals", { intent_id: intent.id })).toMatchObject({ approvals: [] });
    const live = await connect("agent", {}, "/mcp/live?tools=access-control");
    const aclTools = (await live.listTools()).tools.map((tool) => tool.name);
    expect(aclTools.length).toBeGreaterThan(0);
    expect(aclTools).toEqual(apiRoutes.filter((route) => route.tag === "Access control" && routeAdmits(route, ["agent"])).map((route) => route.operationId));
    await expect(connect("agent", {}, "/mcp?tools=intents,everything")).rejects.toThrow(/400|VALIDATION_FAILED/);
  });

  it("works on an intent: create, read, patch state (If-Match), log events, leases, costs and budgets", async () => {
    const mcp = await connect("admin");
    const intent = await ok(mcp, "intentsCreate", { body: { title: "Ship the MCP endpoint", status: "active", state: { step: 0 } } });
    expect(intent).toMatchObject({ title: "Ship the MCP endpoint", status: "active", version: 1 });
    expect(await ok(mcp, "intentsGet", { intent_id: intent.id })).toMatchObject({ id: intent.id, state: { step: 0 } });
    // A UUID in another letter case is the same id, as on REST.
    expect(await ok(mcp, "intentsGet", { intent_id: intent.id.toUpperCase() })).toMatchObject({ id: intent.id });

    const patched = await ok(mcp, "intentsPatchState", { intent_id: intent.id, if_match: intent.version, body: [{ op: "set", path: "/step", value: 1 }] });
    expect(patched).toMatchObject({ version: intent.version + 1, state: { step: 1 } });
    const stale = await refused(mcp, "intentsPatchState", { intent_id: intent.id, if_match: intent.version, body: [{ op: "set", path: "/step", value: 2 }] }, "VERSION_MISMATCH");
    expect(stale.details).toBeTypeOf("object");
    await refused(mcp, "intentsPatchState", { intent_id: intent.id, body: [{ op: "set", path: "/step", value: 2 }] }, "PRECONDITION_REQUIRED");

    const event = await ok(mcp, "intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: { text: "from an MCP client" } } });
    expect(event).toMatchObject({ event_type: "comment", payload: { text: "from an MCP client" } });
    const events = await ok(mcp, "intentsListEvents", { intent_id: intent.id });
    expect(JSON.stringify(events)).toContain("from an MCP client");

    const lease = await ok(mcp, "intentsAcquireLease", { intent_id: intent.id, body: { scope: "draft", ttl_seconds: 60, agent_id: "writer-1" } });
    expect(lease).toMatchObject({ scope: "draft", agent_id: "writer-1" });
    await refused(mcp, "intentsAcquireLease", { intent_id: intent.id, body: { scope: "draft", ttl_seconds: 60, agent_id: "writer-2" } }, "LEASE_HELD");
    await ok(mcp, "intentsReleaseLease", { intent_id: intent.id, lease_id: lease.id });

    await ok(mcp, "costsSetBudget", { intent_id: intent.id, if_match: (await ok(mcp, "intentsGet", { intent_id: intent.id })).version, body: { max_total_cents: 1000, alert_threshold_percent: 80 } });
    await ok(mcp, "costsRecord", { intent_id: intent.id, body: { agent_id: "writer-1", cost_type: "tokens", amount: 10, unit: "tokens" } });
    const costs = await ok(mcp, "costsList", { intent_id: intent.id, query: { limit: 10 } });
    expect(JSON.stringify(costs)).toContain("tokens");

    // What REST sees is what the tools wrote.
    const rest = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
    expect(rest).toMatchObject({ state: { step: 1 } });
  });

  it("claims and completes tasks, posts and reads channel messages, reads and writes memory", async () => {
    const mcp = await connect("admin");
    const intent = await createIntent(cluster);
    const task = await ok(mcp, "tasksCreate", { intent_id: intent.id, body: { title: "research" } });
    // A task is claimed by an agent: the connection's key and X-Agent-ID, as on REST (an operator may not claim).
    await refused(await connect("operator"), "tasksClaim", { task_id: task.id }, "FORBIDDEN");
    const worker = await connect(null, await agentHeaders(cluster, "mcp-worker"));
    expect(await ok(worker, "tasksClaim", { task_id: task.id })).toMatchObject({ id: task.id, status: "claimed", assigned_agent: "mcp-worker" });
    await ok(worker, "tasksStart", { task_id: task.id });
    const done = await ok(worker, "tasksComplete", { task_id: task.id, body: { output: { answer: 42 } } });
    expect(done).toMatchObject({ id: task.id, status: "completed", output: { answer: 42 } });
    const again = await call(worker, "tasksComplete", { task_id: task.id, body: {} });
    expect(again.isError).toBe(true);
    expect(again.structuredContent?.code).toMatch(/^[A-Z_]+$/);

    const channel = await ok(mcp, "channelsCreate", { intent_id: intent.id, body: { name: "general", members: ["writer-1"] } });
    const sent = await ok(mcp, "channelsSend", { channel_id: channel.id, body: { sender: "writer-1", message_type: "notify", payload: { hello: "world" } } });
    expect(sent).toMatchObject({ channel_id: channel.id, payload: { hello: "world" } });
    // A list REST pages in headers comes as the command's page (a tool result has no headers).
    expect(await ok(mcp, "channelsList", { intent_id: intent.id })).toMatchObject({ channels: [expect.objectContaining({ id: channel.id })], has_more: false, next_cursor: null });
    const messages = await ok(mcp, "channelsListMessages", { channel_id: channel.id, query: { limit: 10 } });
    expect(messages).toEqual([expect.objectContaining({ id: sent.id, payload: { hello: "world" } })]);

    // An agent's own memory, written and read by that agent.
    await ok(worker, "memoryPut", { agent_id: "mcp-worker", namespace: "notes", key: "k1", body: { value: { remembered: true } } });
    expect(await ok(worker, "memoryLookup", { agent_id: "mcp-worker", namespace: "notes", key: "k1" })).toMatchObject({ value: { remembered: true } });
    const entry = await ok(worker, "memoryCreate", { body: { agent_id: "mcp-worker", namespace: "notes", key: "k2", value: { n: 2 } } });
    expect(await ok(worker, "memoryGet", { entry_id: entry.id })).toMatchObject({ key: "k2", value: { n: 2 } });
  });

  it("requests input from a human and answers the suspension; requests and decides an approval", async () => {
    const agent = await connect("agent");
    const operator = await connect("operator");
    const intent = await createIntent(cluster);
    const suspended = await ok(agent, "governanceSuspend", {
      intent_id: intent.id,
      body: { question: "Ship it?", fallback_policy: "fail", choices: [{ value: "yes", label: "Yes" }, { value: "no", label: "No" }], timeout_seconds: 600 },
    });
    expect(suspended.status).toBe("suspended_awaiting_input");
    const suspensionId = suspended.state._suspension.id;
    // An agent key may not answer; the value must be one of the choices.
    await refused(agent, "governanceRespond", { intent_id: intent.id, body: { suspension_id: suspensionId, value: "yes" } }, "FORBIDDEN");
    const wrong = await refused(operator, "governanceRespond", { intent_id: intent.id, body: { suspension_id: suspensionId, value: "maybe" } }, "INVALID_RESPONSE_VALUE");
    expect(wrong.valid_choices ?? wrong.details?.valid_choices).toBeDefined();
    const answered = await ok(operator, "governanceRespond", { intent_id: intent.id, body: { suspension_id: suspensionId, value: "yes" } });
    expect(answered).toMatchObject({ resolution: "responded", value: "yes" });
    expect((await ok(operator, "intentsGet", { intent_id: intent.id })).status).toBe("active");

    const approval = await ok(agent, "governanceCreateApproval", { intent_id: intent.id, body: { action: "complete", reason: "done" } });
    expect(approval).toMatchObject({ status: "pending" });
    await refused(agent, "governanceApprove", { intent_id: intent.id, approval_id: approval.id, body: {} }, "FORBIDDEN");
    const approved = await ok(operator, "governanceApprove", { intent_id: intent.id, approval_id: approval.id, body: { notes: "fine" } });
    expect(approved).toMatchObject({ status: "approved" });
    await refused(operator, "governanceDeny", { intent_id: intent.id, approval_id: approval.id, body: {} }, "APPROVAL_NOT_PENDING");
  });

  it("acts under the connection's X-Agent-ID, bound to the key as on REST", async () => {
    await cluster.sdk("agent", "mcp-bound-agent").send("agentsRegisterAlias", { body: { agent_id: "mcp-bound-agent", capabilities: [] } });
    const other = await connect("other", { "X-Agent-ID": "mcp-bound-agent" });
    const intent = await createIntent(cluster);
    await refused(other, "intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: {} } }, "AGENT_NOT_BOUND");
    const owner = await connect("agent", { "X-Agent-ID": "mcp-bound-agent" });
    expect(await ok(owner, "intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: {} } })).toMatchObject({ actor: "mcp-bound-agent" });
  });

  it("hostile inputs are refused with the catalogued code and write nothing", async () => {
    const mcp = await connect("admin");
    const intent = await createIntent(cluster, { state: { a: 1 } });
    const before = await allEvents(cluster, intent.id);
    const patch = (args: Record<string, unknown>) => ({ intent_id: intent.id, if_match: intent.version, body: [{ op: "set", path: "/a", value: 2 }], ...args });

    await refused(mcp, "intentsPatchState", patch({ sneaky: true }), "VALIDATION_FAILED");
    await refused(mcp, "intentsPatchState", patch({ intent_id: "../../admin" }), "INTENT_NOT_FOUND");
    await refused(mcp, "intentsPatchState", patch({ intent_id: 42 }), "VALIDATION_FAILED");
    await refused(mcp, "intentsPatchState", patch({ intent_id: UNKNOWN_ID }), "INTENT_NOT_FOUND");
    await refused(mcp, "intentsPatchState", patch({ body: { op: "set" } }), "VALIDATION_FAILED");
    await refused(mcp, "intentsPatchState", patch({ body: null }), "VALIDATION_FAILED");
    await refused(mcp, "intentsPatchState", patch({ if_match: "W/x" }), "INVALID_IF_MATCH");
    await refused(mcp, "intentsPatchState", patch({ if_match: { v: 1 } }), "VALIDATION_FAILED");
    await refused(mcp, "intentsPatchState", patch({ body: [{ op: "set", path: "/a", value: "x".repeat(10), extra: 1 }] }), "VALIDATION_FAILED");
    await refused(mcp, "intentsList", { query: { limit: { $gt: 1 } } }, "VALIDATION_FAILED");
    await refused(mcp, "intentsList", { query: "limit=1" }, "VALIDATION_FAILED");
    await refused(mcp, "intentsCreate", { body: { title: "t", status: "completed" } }, "VALIDATION_FAILED");
    await refused(mcp, "intentsCreate", { body: { title: "t", created_by: "has space" } }, "VALIDATION_FAILED");

    // NUL, lone surrogates and numbers that would not read back are refused with the whole request, before any tool runs.
    for (const [raw, code] of [
      ['"a\\u0000b"', "NUL_CHARACTER"],
      ['"\\ud800"', "LONE_SURROGATE"],
      ["9007199254740993", "NUMBER_NOT_REPRESENTABLE"],
    ] as const) {
      const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"intentsPatchState","arguments":{"intent_id":"${intent.id}","if_match":${intent.version},"body":[{"op":"set","path":"/a","value":${raw}}]}}}`;
      const res = await fetch(`${cluster.baseUrl}/mcp`, {
        method: "POST",
        headers: { "X-API-Key": TEST_KEYS.admin, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
        body,
      });
      expect(res.status).toBe(400);
      const answer = (await res.json()) as { jsonrpc: string; error: { code: number; message: string; data: { code: string } } };
      expect(answer).toMatchObject({ jsonrpc: "2.0", error: { code: -32700, data: { code } } });
      expect(answer.error.message.startsWith(code)).toBe(true);
    }
    // An unknown tool is a protocol error.
    await expect(mcp.callTool({ name: "dropEverything", arguments: {} })).rejects.toThrow(/no tool/);

    const after = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
    expect(after).toMatchObject({ version: intent.version, state: { a: 1 } });
    expect(await allEvents(cluster, intent.id)).toEqual(before);
  });

  it("reads intents and their event logs as resources; an unknown one is a resource-not-found error carrying the code", async () => {
    const mcp = await connect("admin");
    const intent = await createIntent(cluster, { title: "resource intent" });
    await cluster.sdk().send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "comment", payload: { n: 1 } } });
    const { resourceTemplates } = await mcp.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(["intentmesh://intents/{intent_id}", "intentmesh://intents/{intent_id}/events"]);
    const { resources } = await mcp.listResources();
    expect(resources).toContainEqual(expect.objectContaining({ uri: `intentmesh://intents/${intent.id}`, name: "resource intent", mimeType: "application/json" }));

    const read = await mcp.readResource({ uri: `intentmesh://intents/${intent.id}` });
    expect(read.contents).toHaveLength(1);
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ id: intent.id, title: "resource intent" });
    const log = await mcp.readResource({ uri: `intentmesh://intents/${intent.id}/events` });
    expect((log.contents[0] as { text: string }).text).toContain('"n":1');

    await expect(mcp.readResource({ uri: `intentmesh://intents/${UNKNOWN_ID}` })).rejects.toMatchObject({ code: -32002, message: expect.stringContaining("INTENT_NOT_FOUND") });
    await expect(mcp.readResource({ uri: "intentmesh://secrets/all" })).rejects.toMatchObject({ code: -32002 });
  });

  it("logs one line per tool call (operation, outcome, caller), never the key or the arguments; the root links the endpoint", async () => {
    const mcp = await connect("admin");
    const secretish = "argument-value-that-must-not-be-logged";
    await refused(mcp, "intentsGet", { intent_id: UNKNOWN_ID }, "INTENT_NOT_FOUND");
    await ok(mcp, "intentsCreate", { body: { title: secretish } });
    const lines = logLines.filter((line) => line.includes('"mcp tool call"')).map((line) => JSON.parse(line));
    expect(lines).toContainEqual(expect.objectContaining({ tool: "intentsGet", route: "/intents/{intent_id}", outcome: "INTENT_NOT_FOUND", status: 404, principal: expect.any(String) }));
    expect(lines).toContainEqual(expect.objectContaining({ tool: "intentsCreate", outcome: "ok", status: 201 }));
    for (const line of logLines) {
      expect(line).not.toContain(TEST_KEYS.admin);
      expect(line).not.toContain(secretish);
    }
    expect(await (await fetch(`${cluster.baseUrl}/`)).json()).toMatchObject({ mcp: "/mcp" });
  });

  it("refuses a connection without a valid key (401 UNAUTHORIZED); GET has no stream on this stateless endpoint", async () => {
    await expect(connect(null)).rejects.toThrow(/401|UNAUTHORIZED/);
    await expect(connect(null, { "X-API-Key": "not-a-key" })).rejects.toThrow(/401|UNAUTHORIZED/);
    const raw = await fetch(`${cluster.baseUrl}/mcp`, { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as { code: string }).code).toBe("UNAUTHORIZED");
    const get = await fetch(`${cluster.baseUrl}/mcp`, { headers: { "X-API-Key": TEST_KEYS.admin, Accept: "text/event-stream" } });
    expect(get.status).toBe(405);
  });
});

describe("the live MCP endpoint (/mcp/live): sessions and resource subscriptions", () => {
  async function liveSession(key: keyof typeof TEST_KEYS = "admin") {
    const client = new Client({ name: "intentmesh-live-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${cluster.baseUrl}/mcp/live`), { requestInit: { headers: { "X-API-Key": TEST_KEYS[key] } } });
    await client.connect(transport);
    clients.push(client);
    const updates: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updates.push(notification.params.uri));
    return { client, transport, updates };
  }
  const comment = (intentId: string) => cluster.sdk().send("intentsAppendEvent", { intent_id: intentId, body: { event_type: "comment", payload: {} } });

  it("tells a subscriber which resource changed as the intent's events arrive; unsubscribing stops it", async () => {
    const { client, transport, updates } = await liveSession();
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
    const [a, b] = [await createIntent(cluster), await createIntent(cluster)];
    const uriA = `intentmesh://intents/${a.id}`;
    const uriB = `intentmesh://intents/${b.id}/events`;
    await client.subscribeResource({ uri: uriA });
    await client.subscribeResource({ uri: uriB });
    // The client opens its notification stream by itself after initializing: wait until it carries one.
    await vi.waitFor(async () => {
      await comment(a.id);
      expect(updates).toContain(uriA);
    }, { timeout: 15_000, interval: 250 });
    // Tools work in the session too, and a state change is an update.
    const seenA = updates.filter((uri) => uri === uriA).length;
    const fresh = await ok(client, "intentsGet", { intent_id: a.id });
    await ok(client, "intentsPatchState", { intent_id: a.id, if_match: fresh.version, body: [{ op: "set", path: "/live", value: true }] });
    await vi.waitFor(() => expect(updates.filter((uri) => uri === uriA).length).toBeGreaterThan(seenA), { timeout: 10_000 });

    await client.unsubscribeResource({ uri: uriA });
    const afterUnsubscribe = updates.filter((uri) => uri === uriA).length;
    await comment(a.id);
    await comment(b.id);
    // One feed delivers in order: once B's update is here, A's would have been too.
    await vi.waitFor(() => expect(updates).toContain(uriB), { timeout: 10_000 });
    expect(updates.filter((uri) => uri === uriA).length).toBe(afterUnsubscribe);
  });

  it("refuses subscriptions the read would refuse, with the code; the stateless endpoint offers none", async () => {
    const { client } = await liveSession();
    await expect(client.subscribeResource({ uri: `intentmesh://intents/${UNKNOWN_ID}` })).rejects.toMatchObject({ code: -32002, message: expect.stringContaining("INTENT_NOT_FOUND") });
    await expect(client.subscribeResource({ uri: "intentmesh://intents/not-a-uuid/events" })).rejects.toMatchObject({ code: -32002, message: expect.stringContaining("INTENT_NOT_FOUND") });
    await expect(client.subscribeResource({ uri: "file:///etc/passwd" })).rejects.toMatchObject({ code: -32002 });
    const stateless = await connect("admin");
    expect(stateless.getServerCapabilities()?.resources?.subscribe).toBeUndefined();
  });

  it("a session answers only the key that opened it; an ended or unknown session is 404; a request needs a session or an initialize", async () => {
    const { transport } = await liveSession("agent");
    const post = (key: keyof typeof TEST_KEYS, sessionId: string | undefined, body = { jsonrpc: "2.0", id: 7, method: "tools/list" }) =>
      fetch(`${cluster.baseUrl}/mcp/live`, {
        method: "POST",
        headers: { "X-API-Key": TEST_KEYS[key], "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18", ...(sessionId ? { "Mcp-Session-Id": sessionId } : {}) },
        body: JSON.stringify(body),
      });
    const stolen = await post("other", transport.sessionId);
    expect(stolen.status).toBe(403);
    expect(((await stolen.json()) as { code: string }).code).toBe("FORBIDDEN");
    expect((await post("agent", "00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await post("agent", undefined)).status).toBe(400);
    expect((await fetch(`${cluster.baseUrl}/mcp/live`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" })).status).toBe(401);
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    expect((await post("agent", sessionId)).status).toBe(404);
  });
});
