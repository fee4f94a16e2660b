import { describe, expect, it } from "vitest";
import { apiRoutes, type ApiRoute } from "@intentmesh/contracts";
import { buildOpenApi } from "./openapi";
import { commandInput, type RouteRequest } from "./route-input";
import { requestBodyChecker } from "../../../test/support/openapi-bodies";
import { REPRESENTATIVE_BODIES, REPRESENTATIVE_ID as ID } from "../../../test/support/representative-bodies";

/**
 * Issue 23 items 9 and 11: the request body the OpenAPI document gives each operation is the one
 * the server validates with. For every operation that takes a body, a representative body (as
 * its own e2e tests send it) must pass both the server's contract (the command input the gateway
 * builds from it) and the documented schema (what a client generator fed /openapi.json builds);
 * and an unknown field anywhere in it must be refused by the contract (one rule, strict objects).
 * Test gateways also check every body an e2e test sends that the server accepts against the
 * document (test/support/cluster.ts), so the table here is the floor, not the whole check.
 */
const withBody = apiRoutes.filter((route) => route.body);
const document = buildOpenApi(apiRoutes, "test");
const documented = requestBodyChecker(document);

/** The request an e2e test sends, as the gateway sees it: path parameters, the body, If-Match. */
function requestOf(route: ApiRoute, body: unknown): RouteRequest {
  const params = Object.fromEntries([...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => [name!, name === "agent_id" ? "writer-1" : name!.endsWith("_id") ? ID : "x"]));
  const headers: Record<string, string> = { "if-match": "1" };
  return { params, query: {}, body, get: (name: string) => headers[name.toLowerCase()] };
}

const contractIssues = (route: ApiRoute, body: unknown) => {
  const parsed = route.command.input.safeParse(commandInput(route, requestOf(route, body)));
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

/** The body with `unexpected_field` added to one object of it (the top, or a nested one), each in turn. */
function withUnknownField(body: unknown): { where: string; body: unknown }[] {
  const out: { where: string; body: unknown }[] = [];
  const visit = (value: unknown, path: (string | number)[]) => {
    if (Array.isArray(value)) value.forEach((item, i) => visit(item, [...path, i]));
    else if (value && typeof value === "object") {
      out.push({ where: `/${path.join("/")}`, body: setAt(body, path, { ...(value as object), unexpected_field: 1 }) });
      for (const [key, child] of Object.entries(value)) if (!FREE_FORM.has(key)) visit(child, [...path, key]);
    }
  };
  visit(body, []);
  return out;
}
/** Fields that are free-form JSON by the spec (their keys are the client's): state, payloads, metadata, context, values, inputs (a task's, a workflow trigger's) and outputs, a tool's parameters and result, a trigger's action (the MCP server's, additionalProperties), a coordinator's guardrails and a decision's alternatives (RFC-0013). */
const FREE_FORM = new Set(["state", "payload", "metadata", "context", "value", "input", "inputs", "output", "constraints", "trace_context", "notify", "signals", "parameters", "result", "action", "guardrails", "alternatives_considered", "state_summary"]);
const setAt = (root: unknown, path: (string | number)[], value: unknown): unknown => {
  if (!path.length) return value;
  const [head, ...rest] = path;
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) };
  copy[head!] = setAt(copy[head!], rest, value);
  return copy;
};

describe("request bodies: the document and the contract agree (issue 23 items 9, 11)", () => {
  it("has a representative body for every operation that takes one, and none for an operation that takes none", () => {
    expect(Object.keys(REPRESENTATIVE_BODIES).sort()).toEqual(withBody.map((route) => route.operationId).sort());
  });

  it("every representative body passes the server's contract and the documented request schema", () => {
    const failures: string[] = [];
    for (const route of withBody) {
      const body = REPRESENTATIVE_BODIES[route.operationId];
      for (const issue of contractIssues(route, body)) failures.push(`${route.operationId} (contract): ${issue}`);
      const problem = documented(route.operationId, body);
      if (problem) failures.push(`${route.operationId} (document): ${problem}`);
    }
    expect(failures).toEqual([]);
  });

  it("an unknown field in any object of any body is refused by the contract (strict objects everywhere)", () => {
    const accepted: string[] = [];
    for (const route of withBody) {
      for (const { where, body } of withUnknownField(REPRESENTATIVE_BODIES[route.operationId])) {
        if (!contractIssues(route, body).length) accepted.push(`${route.operationId} ${where}`);
      }
    }
    expect(accepted).toEqual([]);
  });

  it("marks a request body required exactly where the contract refuses an absent (empty) one", () => {
    for (const route of withBody) {
      const op = Object.values(document.paths![`/api/v1${route.path}`]!).find((o: any) => o.operationId === route.operationId) as { requestBody?: { required?: boolean } };
      expect(op.requestBody?.required ?? false, route.operationId).toBe(contractIssues(route, {}).length > 0);
    }
  });
});
