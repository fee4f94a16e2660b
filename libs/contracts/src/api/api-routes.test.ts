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
      } else if (route.pageInHeaders) {
        // The paging goes into headers: the body is the page's list.
        expect(routeResponse(route)).toBe((route.command.output as unknown as { shape: Record<string, unknown> }).shape[route.pageInHeaders.items]);
      } else {
        expect(routeResponse(route)).toBe(route.command.output);
      }
    }
  });
});

describe("agent ids (issue 23 item 12)", () => {
  /** Fields that name an agent, wherever a route's input carries them (path, body, query). */
  const AGENT_FIELDS = new Set(["agent_id", "sender", "members", "allowed_agents", "assigned_agent", "fallback_agent_id", "agent"]);
  const unwrap = (schema: z.ZodType): z.ZodType => {
    const def = (schema as unknown as { _zod: { def: { type: string; innerType?: z.ZodType; element?: z.ZodType } } })._zod.def;
    if (["optional", "nullable", "default", "readonly", "prefault"].includes(def.type)) return unwrap(def.innerType!);
    if (def.type === "array") return unwrap(def.element!);
    return schema;
  };
  function agentFields(schema: z.ZodType, path: string, out: [string, z.ZodType][], seen = new Set<unknown>()): void {
    if (seen.has(schema)) return;
    seen.add(schema);
    const def = (schema as unknown as { _zod: { def: Record<string, any> } })._zod.def;
    if (def.type === "object") {
      for (const [key, value] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        if (AGENT_FIELDS.has(key)) out.push([`${path}.${key}`, unwrap(value)]);
        agentFields(value, `${path}.${key}`, out, seen);
      }
    } else if (["optional", "nullable", "default", "readonly", "prefault", "catch"].includes(def.type)) agentFields(def.innerType, path, out, seen);
    else if (def.type === "array") agentFields(def.element, `${path}[]`, out, seen);
    else if (def.type === "union") for (const option of def.options) agentFields(option, path, out, seen);
    else if (def.type === "pipe") {
      agentFields(def.in, path, out, seen);
      agentFields(def.out, path, out, seen);
    }
  }

  it("every field of every route's input that names an agent is the one AgentId schema, which refuses *, ., .. and role:", async () => {
    const { AgentId } = await import("../common");
    const found: [string, z.ZodType][] = [];
    for (const route of apiRoutes) agentFields(route.command.input, route.operationId, found);
    expect(found.length).toBeGreaterThan(30);
    expect(found.filter(([, schema]) => schema !== AgentId).map(([where]) => where)).toEqual([]);
    for (const bad of ["*", ".", "..", "role:reviewer", "a b", "", "x".repeat(201)]) expect(AgentId.safeParse(bad).success, bad).toBe(false);
    for (const good of ["writer-1", "agent@example.org", "a.b", "urn:x:1", "*x", "roles"]) expect(AgentId.safeParse(good).success, good).toBe(true);
  });
});
