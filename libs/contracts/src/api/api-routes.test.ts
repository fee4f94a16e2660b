import { describe, expect, it } from "vitest";
import type { z } from "../zod";
import { errorCatalogue } from "../error-catalogue";
import { routeErrors, routeResponse } from "../api-route";
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
      const errors = routeErrors(route);
      for (const code of errors) expect(errorCatalogue, `${route.operationId}: ${code}`).toHaveProperty(code);
      expect(new Set(errors).size, route.operationId).toBe(errors.length);
      expect(route.access.roles.length, route.operationId).toBeGreaterThan(0);
    }
  });

  it("declares PRECONDITION_REQUIRED exactly where If-Match is required", () => {
    for (const route of apiRoutes) {
      if (route.ifMatch === "required") expect(routeErrors(route), route.operationId).toContain("PRECONDITION_REQUIRED");
      if (!route.ifMatch) expect(routeErrors(route), route.operationId).not.toContain("PRECONDITION_REQUIRED");
    }
  });
});

describe("the command catalogue", () => {
  it("declares only catalogued error codes for every command, each once", async () => {
    const contracts = await import("../index");
    const { listCommands } = await import("../subjects-doc");
    for (const { catalogue, key, subject } of listCommands()) {
      const command = (contracts as unknown as Record<string, Record<string, { errors: readonly string[] }>>)[catalogue]![key]!;
      for (const code of command.errors) expect(errorCatalogue, `${subject}: ${code}`).toHaveProperty(code);
      expect(new Set(command.errors).size, subject).toBe(command.errors.length);
    }
  });

  it("lets a route narrow its command only where it must: fewer codes, or one branch of the answer", () => {
    for (const route of apiRoutes) {
      if (route.errors) {
        for (const code of route.errors) expect(route.command.errors, `${route.operationId}: ${code}`).toContain(code);
        expect(route.errors.length, `${route.operationId} repeats its command's errors`).toBeLessThan(route.command.errors.length);
      }
      if (route.response) {
        const options = (route.command.output as unknown as { options?: unknown[] }).options ?? [];
        expect(options, `${route.operationId}: its response is a branch of its command's output`).toContain(route.response);
        expect(routeResponse(route)).toBe(route.response);
      } else {
        expect(routeResponse(route)).toBe(route.command.output);
      }
    }
  });
});
