import { describe, expect, it } from "vitest";
import { apiRoutes, routeErrors, COMMON_ROUTE_ERRORS, errorCatalogue, listErrors } from "@intentmesh/contracts";
import { buildOpenApi } from "./openapi";

interface Operation {
  operationId: string;
  tags: string[];
  parameters?: { in: string; name: string; required?: boolean }[];
  responses: Record<string, { description: string; content?: Record<string, { schema: { allOf?: { properties?: { code?: { enum: string[] } } }[] } }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>>; components?: { responses?: Record<string, { description: string; content: Record<string, { example: { code: string } }> }> } };

const document = buildOpenApi(apiRoutes, "test") as unknown as Document;
const operation = (method: string, path: string) => document.paths[`/api/v1${path}`]![method]!;
const codesOf = (op: Operation, status: number) => op.responses[status]?.content?.["application/json"]?.schema.allOf?.[1]?.properties?.code?.enum ?? [];

describe("OpenAPI document", () => {
  it("documents every catalogued error as a response component", () => {
    const responses = (buildOpenApi([], "test") as unknown as Document).components?.responses ?? {};
    const errors = listErrors();
    expect(Object.keys(responses).sort()).toEqual(errors.map((error) => error.code));
    for (const error of errors) {
      expect(responses[error.code]!.description).toContain(String(error.status));
      expect(responses[error.code]!.content["application/json"]!.example.code).toBe(error.code);
    }
  });

  it("gives every route an operation with its operationId, tag, declared error codes and the common ones", () => {
    for (const route of apiRoutes) {
      const op = operation(route.method, route.path);
      expect(op.operationId).toBe(route.operationId);
      expect(op.tags).toEqual([route.tag]);
      expect(Object.keys(op.responses)).toContain(String(route.status ?? 200));
      for (const code of [...routeErrors(route), ...COMMON_ROUTE_ERRORS]) expect(codesOf(op, errorCatalogue[code].status), `${route.operationId}: ${code}`).toContain(code);
    }
  });

  it("marks If-Match required where the service answers 428 without it, and documents X-Agent-ID", () => {
    for (const route of apiRoutes) {
      const parameters = operation(route.method, route.path).parameters ?? [];
      const ifMatch = parameters.find((p) => p.in === "header" && p.name === "If-Match");
      if (route.ifMatch) expect(ifMatch?.required ?? false, route.operationId).toBe(route.ifMatch === "required");
      else expect(ifMatch, route.operationId).toBeUndefined();
      expect(parameters.some((p) => p.in === "header" && p.name === "X-Agent-ID"), route.operationId).toBe(true);
    }
  });

  it("describes the inbox stream as text/event-stream", () => {
    expect(Object.keys(operation("get", "/subscribe/inbox").responses[200]!.content ?? {})).toEqual(["text/event-stream"]);
  });

  it("describes the SSE streams as text/event-stream with Last-Event-ID", () => {
    for (const path of ["/subscribe/intents/{intent_id}", "/subscribe/channels/{channel_id}", "/agents/{agent_id}/subscribe"]) {
      const op = operation("get", path);
      expect(Object.keys(op.responses[200]!.content ?? {})).toEqual(["text/event-stream"]);
      expect(op.parameters?.some((p) => p.in === "header" && p.name === "Last-Event-ID")).toBe(true);
    }
  });
});
