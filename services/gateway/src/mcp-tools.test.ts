import { describe, expect, it } from "vitest";
import Ajv2020 from "ajv/dist/2020";
import { apiRoutes, isAppError, routeById, type ApiRoute } from "@intentmesh/contracts";
import { commandInput } from "./route-input";
import { IF_MATCH_ARGUMENT, mcpTools, pathParams, toolCall, toolOf } from "./mcp-tools";
import { REPRESENTATIVE_BODIES, REPRESENTATIVE_ID as ID } from "../../../test/support/representative-bodies";

const tools = mcpTools(apiRoutes);
const tool = (name: string) => tools.find((candidate) => candidate.name === name)!;
const codeOf = (run: () => unknown): string | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (isAppError(error)) return error.code;
    throw error;
  }
};

/** Arguments naming every path parameter (agent ids and names as text, other ids as a UUID). */
const pathArgs = (route: ApiRoute) => Object.fromEntries(pathParams(route).map((name) => [name, name === "agent_id" ? "writer-1" : name.endsWith("_id") ? ID : "x"]));

describe("MCP tools derived from the route catalogue", () => {
  it("one tool per operation, named by its operationId (unique, within MCP's name rules), with a valid JSON Schema object input", () => {
    expect(tools.map((t) => t.name)).toEqual(apiRoutes.map((route) => route.operationId));
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const t of tools) {
      expect(t.name).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
      expect(t.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
      expect(() => ajv.compile(t.inputSchema), t.name).not.toThrow();
      for (const name of pathParams(t.route)) expect(t.inputSchema.required, t.name).toContain(name);
      expect(t.description).toContain(`/api/v1${t.route.path}`);
    }
  });

  it("the input schema takes what the route reads: path parameters, query, body, If-Match and named headers", () => {
    expect(Object.keys(tool("intentsPatchState").inputSchema.properties).sort()).toEqual(["body", "if_match", "intent_id"]);
    expect(tool("intentsPatchState").inputSchema.required).toEqual(["intent_id", "body", IF_MATCH_ARGUMENT]);
    expect(tool("intentsList").inputSchema.properties.query).toMatchObject({ type: "object", properties: { limit: { type: "integer" } } });
    expect(tool("intentsGet").inputSchema.properties).not.toHaveProperty("body");
    expect(tool("intentsGet").annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tool("intentsReleaseLease").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    // A header field of the command input (Idempotency-Key of federation dispatch) is an argument.
    const withHeaders = tools.filter((t) => t.route.headers);
    for (const t of withHeaders) for (const field of Object.keys(t.route.headers!)) expect(t.inputSchema.properties).toHaveProperty(field);
    // POST /tasks names its intent in the body: the tool's body documents it, as the REST body does.
    expect((tool("tasksCreateWithIntentId").inputSchema.properties.body as { properties: object }).properties).toHaveProperty("intent_id");
  });

  it("a new route is a tool without glue", () => {
    const route: ApiRoute = { ...routeById("intentsGet"), operationId: "intentsGetAgain", path: "/again/{intent_id}" };
    expect(toolOf(route)).toMatchObject({ name: "intentsGetAgain", inputSchema: { required: ["intent_id"] } });
  });

  it("every representative body, passed as a tool's arguments, becomes the command input REST builds", () => {
    const covered = tools.filter((candidate) => candidate.route.body && REPRESENTATIVE_BODIES[candidate.name] !== undefined);
    expect(covered.length).toBeGreaterThan(50);
    for (const t of covered) {
      const body = REPRESENTATIVE_BODIES[t.name];
      const args = { ...pathArgs(t.route), body, ...(t.route.ifMatch ? { [IF_MATCH_ARGUMENT]: 1 } : {}) };
      const call = toolCall(t, args);
      const parsed = t.route.command.input.safeParse(commandInput(t.route, call));
      expect(parsed.success, `${t.name}: ${parsed.success ? "" : JSON.stringify(parsed.error.issues)}`).toBe(true);
    }
  });

  it("arguments become the route's request: canonical UUIDs, query values as URL text, If-Match as the header, an absent body", () => {
    const upper = ID.toUpperCase();
    const call = toolCall(tool("intentsPatchState"), { intent_id: upper, if_match: 3, body: [] });
    expect(call.params).toEqual({ intent_id: ID.toLowerCase() });
    expect(call.get("If-Match")).toBe("3");
    expect(call.bodyAbsent).toBe(false);
    expect(call.url).toBeUndefined();
    const list = toolCall(tool("intentsList"), { query: { limit: 5, status: "active", created_by: null, flags: [true, 1] } });
    expect(list.query).toEqual({ limit: "5", status: "active", flags: ["true", "1"] });
    expect(list.bodyAbsent).toBe(true);
    expect(toolCall(tool("intentsCreate"), {}).body).toEqual({});
  });

  it("refuses malformed calls with catalogued codes before anything runs", () => {
    const patch = tool("intentsPatchState");
    expect(codeOf(() => toolCall(patch, { intent_id: ID, body: [], extra: 1 }))).toBe("VALIDATION_FAILED");
    expect(codeOf(() => toolCall(patch, { body: [] }))).toBe("VALIDATION_FAILED");
    expect(codeOf(() => toolCall(patch, { intent_id: 7 }))).toBe("VALIDATION_FAILED");
    expect(codeOf(() => toolCall(patch, { intent_id: "not-a-uuid" }))).toBe("INTENT_NOT_FOUND");
    expect(codeOf(() => toolCall(patch, { intent_id: ID, if_match: [1] }))).toBe("VALIDATION_FAILED");
    expect(codeOf(() => toolCall(tool("intentsList"), { query: [1] }))).toBe("VALIDATION_FAILED");
    expect(codeOf(() => toolCall(tool("intentsList"), { query: { limit: { $gt: 1 } } }))).toBe("VALIDATION_FAILED");
  });
});
