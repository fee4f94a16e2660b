import { describe, expect, it } from "vitest";
import { listErrors } from "@intentmesh/contracts";
import { buildOpenApi } from "./openapi";

describe("OpenAPI document", () => {
  it("documents every catalogued error as a response component", () => {
    const document = buildOpenApi([], "test") as { components?: { responses?: Record<string, { description: string; content: Record<string, { example: { code: string } }> }> } };
    const responses = document.components?.responses ?? {};
    const errors = listErrors();
    expect(Object.keys(responses).sort()).toEqual(errors.map((error) => error.code));
    for (const error of errors) {
      expect(responses[error.code]!.description).toContain(String(error.status));
      expect(responses[error.code]!.content["application/json"]!.example.code).toBe(error.code);
    }
  });
});
