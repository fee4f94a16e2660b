import { afterAll, beforeAll, expect, it } from "vitest";
import { apiRoutes, isErrorCode, type OperationId } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { createClient, IntentmeshError } from "../src/index";

/**
 * Every operation of the catalogue, called through its SDK method against the real gateway,
 * reaches its route: the gateway answers it (a success or a catalogued error of that route:
 * mostly a 404 for the made-up ids), never "no such endpoint", never a 5xx.
 */
let cluster: TestCluster;

beforeAll(async () => {
  // Made-up inputs may reach codes a route does not declare; here only the routing is under test.
  cluster = await startTestCluster({ strictRouteErrors: false });
});
afterAll(async () => {
  await cluster?.stop();
});

it("each route of the catalogue answers its SDK method", async () => {
  const client = createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS.admin, retry: { attempts: 1 } });
  const outcomes: string[] = [];
  for (const route of apiRoutes) {
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const request: Record<string, unknown> = Object.fromEntries(params.map((name) => [name, name.endsWith("_id") && name !== "agent_id" && name !== "role_id" ? "00000000-0000-4000-8000-00000000000a" : `sdk-${name}`]));
    if (route.body) request.body = {};
    if (route.ifMatch) request.ifMatch = 1;
    const method = client.ops[route.operationId as OperationId] as unknown as (request: Record<string, unknown>) => Promise<unknown>;
    try {
      await method(request);
      outcomes.push(`${route.operationId}: ok`);
    } catch (error) {
      expect(error, route.operationId).toBeInstanceOf(IntentmeshError);
      const failure = error as IntentmeshError;
      expect(isErrorCode(failure.code), `${route.operationId}: ${failure.code}`).toBe(true);
      expect(failure.code, route.operationId).not.toBe("ROUTE_NOT_FOUND");
      expect(failure.status, `${route.operationId}: ${failure.code} ${failure.message}`).toBeLessThan(500);
      outcomes.push(`${route.operationId}: ${failure.code}`);
    }
  }
  expect(outcomes).toHaveLength(apiRoutes.length);
});
