import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { apiRoutes, intentEventTypes as catalogueEventTypes, taskEvents, type OperationId, type ResponseOf } from "@intentmesh/contracts";
import { createClient, intentEventTypes as sdkEventTypes, routes, TASK_EVENT_PREFIX } from "../src/index";
import { renderRoutesModule } from "../scripts/routes-module";
import { renderEventNamesModule } from "../scripts/event-names-module";

interface Sent {
  method: string;
  url: URL;
  headers: Headers;
  body: unknown;
}

/** A fetch that records what the SDK puts on the wire and answers an empty success. */
function recorder() {
  const sent: Sent[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({ method: init?.method ?? "GET", url: new URL(String(input)), headers: new Headers(init?.headers), body: init?.body ? JSON.parse(String(init.body)) : undefined });
    return new Response("{}", { status: 200, headers: { "Content-Type": "application/json", ETag: '"7"' } });
  }) as typeof globalThis.fetch;
  return { sent, fetch };
}

describe("the SDK and the route catalogue", () => {
  it("has a method for every route of the catalogue, which sends that route's method, path, body, query, If-Match and headers", async () => {
    const { sent, fetch } = recorder();
    const client = createClient({ baseUrl: "http://server.test/", apiKey: "k", agentId: "agent-a", fetch });
    expect(apiRoutes.length).toBeGreaterThan(90);
    for (const route of apiRoutes) {
      const method = client.ops[route.operationId as OperationId] as unknown as (request: Record<string, unknown>) => Promise<unknown>;
      expect(typeof method, route.operationId).toBe("function");
      const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const request: Record<string, unknown> = Object.fromEntries(params.map((name) => [name, `${name} value/ä`]));
      if (route.body) request.body = { marker: route.operationId };
      for (const field of route.liftFromBody ?? []) request[field] = `${field}-lifted`;
      if (route.query) request.query = { limit: 3, status: ["a", "b"] };
      if (route.ifMatch) request.ifMatch = 5;
      for (const field of Object.keys(route.headers ?? {})) request[field] = `${field}-value`;
      await method(request);

      const wire = sent.at(-1)!;
      const where = `${route.operationId} (${route.method.toUpperCase()} ${route.path})`;
      expect(wire.method, where).toBe(route.method.toUpperCase());
      const expectedPath = `/api/v1${route.path.replace(/\{(\w+)\}/g, (_: string, name: string) => encodeURIComponent(`${name} value/ä`))}`;
      expect(wire.url.pathname, where).toBe(expectedPath);
      expect(wire.headers.get("x-api-key"), where).toBe("k");
      expect(wire.headers.get("x-agent-id"), where).toBe("agent-a");
      if (route.body) {
        const lifted = Object.fromEntries((route.liftFromBody ?? []).map((field) => [field, `${field}-lifted`]));
        expect(wire.body, where).toEqual({ marker: route.operationId, ...lifted });
        expect(wire.headers.get("content-type"), where).toBe("application/json");
      } else expect(wire.body, where).toBeUndefined();
      if (route.query) expect(Object.fromEntries(wire.url.searchParams), where).toEqual({ limit: "3", status: "a,b" });
      else expect(wire.url.search, where).toBe("");
      expect(wire.headers.get("if-match"), where).toBe(route.ifMatch ? "5" : null);
      for (const [field, header] of Object.entries(route.headers ?? {})) expect(wire.headers.get(header), where).toBe(`${field}-value`);
    }
    expect(sent.length).toBe(apiRoutes.length);
  });

  it("generates its route table from the catalogue (run pnpm sdk:generate when this fails)", () => {
    const committed = readFileSync(resolve(__dirname, "../src/generated/routes.ts"), "utf8");
    expect(committed, "packages/sdk/src/generated/routes.ts is stale: run pnpm sdk:generate").toBe(renderRoutesModule());
    expect(Object.keys(routes).sort()).toEqual(apiRoutes.map((route) => route.operationId).sort());
  });

  it("generates its event-name table from the event catalogue (run pnpm sdk:generate when this fails)", () => {
    const committed = readFileSync(resolve(__dirname, "../src/generated/event-names.ts"), "utf8");
    expect(committed, "packages/sdk/src/generated/event-names.ts is stale: run pnpm sdk:generate").toBe(renderEventNamesModule());
    expect(sdkEventTypes).toEqual(catalogueEventTypes);
    expect(Object.values(taskEvents).every((definition) => definition.name.startsWith(TASK_EVENT_PREFIX))).toBe(true);
  });

  it("reports a route added to the catalogue as missing from a stale table", () => {
    const extra = { ...apiRoutes[0]!, operationId: "intentsBrandNew", path: "/intents/{intent_id}/brand-new" };
    const rendered = renderRoutesModule([...apiRoutes, extra]);
    expect(rendered).toContain('intentsBrandNew: {"method":"POST","path":"/intents/{intent_id}/brand-new"');
    expect(rendered).not.toBe(readFileSync(resolve(__dirname, "../src/generated/routes.ts"), "utf8"));
  });

  it("sends an Idempotency-Key on every federation dispatch, the caller's or a fresh one", async () => {
    const { sent, fetch } = recorder();
    const client = createClient({ baseUrl: "http://server.test", fetch });
    await client.ops.federationDispatch({ body: { intent_id: "00000000-0000-4000-8000-000000000000", target_server: "https://peer.test" } });
    await client.ops.federationDispatch({ body: { intent_id: "00000000-0000-4000-8000-000000000000", target_server: "https://peer.test" }, idempotency_key: "mine" });
    const [fresh, mine] = sent.map((s) => s.headers.get("idempotency-key"));
    expect(fresh).toMatch(/^[0-9a-f-]{36}$/);
    expect(mine).toBe("mine");
  });

  it("answers the ETag's version beside the body", async () => {
    const { fetch } = recorder();
    const client = createClient({ baseUrl: "http://server.test", fetch });
    const result = await client.send("intentsGet", { intent_id: "x" });
    expect(result.version).toBe(7);
    expect(result.status).toBe(200);
  });
});

// Compile-time checks of the derived types (the type checker runs them with `pnpm typecheck`).
import type { RequestOf, ResponseOf as SdkResponseOf } from "../src/index";
type Expect<T extends true> = T;
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export type TypeChecks = [
  Expect<Equal<RequestOf<"intentsGet">, { intent_id: string }>>,
  Expect<"ifMatch" extends keyof RequestOf<"intentsPatchState"> ? true : false>,
  Expect<"idempotency_key" extends keyof RequestOf<"federationDispatch"> ? true : false>,
  Expect<Equal<SdkResponseOf<"intentsGet">["status"], "draft" | "active" | "blocked" | "completed" | "abandoned" | "suspended_awaiting_input">>,
  // @ts-expect-error a path parameter is required
  Expect<Equal<RequestOf<"intentsGet">, {}>>,
];

describe("response types", () => {
  it("type a page whose cursor travels in headers as the array the route answers (channelsList)", () => {
    expectTypeOf<ResponseOf<"channelsList">>().toBeArray();
    expectTypeOf<ResponseOf<"channelsList">[number]["name"]>().toEqualTypeOf<string>();
    // Other lists keep their page object.
    expectTypeOf<ResponseOf<"attachmentsList">>().toHaveProperty("attachments");
  });
});
