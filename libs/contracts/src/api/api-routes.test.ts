import { describe, expect, it } from "vitest";
import type { z } from "../zod";
import { errorCatalogue } from "../error-catalogue";
import { apiRoutes } from "./index";

const shapeOf = (schema: z.ZodType) => ((schema as z.ZodObject).shape ?? {}) as Record<string, z.ZodType>;

describe("the REST route catalogue", () => {
  it("names every operation once and every method and path once", () => {
    const ids = apiRoutes.map((route) => route.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const keys = apiRoutes.map((route) => `${route.method} ${route.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("maps every part of a request onto a field of its command's input", () => {
    for (const route of apiRoutes) {
      const input = shapeOf(route.command.input);
      const where = `${route.operationId} (${route.command.subject})`;
      const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const paramTarget = route.query === "query+path" ? shapeOf(input.query!) : input;
      for (const param of params) expect(Object.keys(paramTarget), `${where}: {${param}}`).toContain(param);
      if (route.body) expect(Object.keys(input), `${where}: body`).toContain(route.body);
      if (route.query) expect(Object.keys(input), `${where}: query`).toContain("query");
      if (route.ifMatch) expect(Object.keys(input), `${where}: If-Match`).toContain("if_match");
      for (const field of [...Object.keys(route.headers ?? {}), ...Object.keys(route.constants ?? {}), ...(route.liftFromBody ?? [])]) {
        expect(Object.keys(input), `${where}: ${field}`).toContain(field);
      }
    }
  });

  it("declares only catalogued error codes, each once, and at least one role per route", () => {
    for (const route of apiRoutes) {
      for (const code of route.errors) expect(errorCatalogue, `${route.operationId}: ${code}`).toHaveProperty(code);
      expect(new Set(route.errors).size, route.operationId).toBe(route.errors.length);
      expect(route.access.roles.length, route.operationId).toBeGreaterThan(0);
    }
  });

  it("declares PRECONDITION_REQUIRED exactly where If-Match is required", () => {
    for (const route of apiRoutes) {
      if (route.ifMatch === "required") expect(route.errors, route.operationId).toContain("PRECONDITION_REQUIRED");
      if (!route.ifMatch) expect(route.errors, route.operationId).not.toContain("PRECONDITION_REQUIRED");
    }
  });
});

describe("the command catalogue's outputs", () => {
  it("gives every bus command an output schema: its own, or its REST route's response", async () => {
    const { listCommands } = await import("../subjects-doc");
    const { commandOutputSchema } = await import("../command-outputs");
    const missing = listCommands().filter((command) => !commandOutputSchema(command.subject)).map((command) => command.subject);
    expect(missing).toEqual([]);
  });
});
