import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRoutes, CLUSTER_SERVICES, healthCommand } from "@intentmesh/contracts";
import { REPLY_STATUS_HEADER } from "@intentmesh/bus";
import { listCommands } from "../../libs/contracts/src/subjects-doc";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { UNKNOWN_ID } from "../support/e2e-helpers";
import { REPRESENTATIVE_BODIES } from "../support/representative-bodies";

/**
 * The catalogue in libs/contracts is what the services must answer: every command it declares has
 * a responder in the running cluster (a service serves whole command groups through
 * openServiceCore's `serve`, which does not type-check with a handler missing), and each validates
 * its input before anything else runs.
 */
let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const ADMIN = { principal: "catalogue-test", roles: ["admin"], actor: "catalogue-test", agent_id: null };

async function ask(subject: string, input: unknown) {
  const reply = await cluster.bus.nc.request(cluster.bus.subject(subject), JSON.stringify({ caller: ADMIN, input }), { timeout: 5000 });
  return { status: reply.headers?.get(REPLY_STATUS_HEADER), body: JSON.parse(new TextDecoder().decode(reply.data)) as { code?: string } };
}

describe("the command catalogue", () => {
  const commands = listCommands();

  it("lists the commands of every service of the cluster", () => {
    for (const service of CLUSTER_SERVICES) expect(commands.some((command) => command.service === service), service).toBe(true);
  });

  it("has a responder for every command, which refuses an input of the wrong shape with a 400", async () => {
    const unanswered: string[] = [];
    for (const command of commands) {
      try {
        const reply = await ask(command.subject, "not an input object");
        expect(reply.status, command.subject).toBe("error");
        expect(reply.body.code, command.subject).toBe("VALIDATION_FAILED");
      } catch (error) {
        if ((error as { code?: string }).code === "503" || /no responders/i.test(String(error))) unanswered.push(command.subject);
        else throw error;
      }
    }
    expect(unanswered).toEqual([]);
  });

  it("answers every service's health subject", async () => {
    for (const service of CLUSTER_SERVICES) {
      const reply = await ask(healthCommand(service).subject, {});
      expect(reply.status, service).toBe("ok");
    }
  });
});

describe("route access, enforced by the gateway from the catalogue", () => {
  it("refuses every route to a key without one of its roles with 403 FORBIDDEN naming the roles, before the service is asked", async () => {
    const restricted = apiRoutes.filter((route) => !route.access.roles.includes("agent"));
    expect(restricted.length).toBeGreaterThan(0);
    for (const route of restricted) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => (name.endsWith("_id") && name !== "agent_id" && name !== "role_id" ? UNKNOWN_ID : "x"));
      const res = await cluster.api(path, { method: route.method.toUpperCase(), key: "agent", body: route.method === "get" || route.method === "delete" ? undefined : {} });
      expect(res.status, `${route.operationId}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
      expect(res.body.details.required_roles).toEqual(route.access.roles);
    }
  });

  it("lets a key with one of the roles through to the service (which then answers for the missing intent)", async () => {
    const route = apiRoutes.find((r) => r.operationId === "tasksCreate")!;
    expect(route.access.roles).not.toContain("agent");
    const res = await cluster.api(route.path.replace("{intent_id}", UNKNOWN_ID), { method: "POST", key: "coordinator", body: { title: "t" } });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("INTENT_NOT_FOUND");
  });
});

/** An admin request whose path goes out exactly as written (no dot-segment resolution). */
async function rawRequest(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(cluster.baseUrl);
  const text = body === undefined ? undefined : JSON.stringify(body);
  // Content-Length always: node's client sends a DELETE body without framing, which no server can read.
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { "X-API-Key": TEST_KEYS.admin, "If-Match": "1", ...(text ? { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(text)) } : {}) } },
      (res) => {
        let data = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (data += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body: data ? JSON.parse(data) : undefined }));
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

/** A route's path with its parameters filled: UUID ids, `agent` for agent_id, `x` for other names. */
const filledPath = (route: (typeof apiRoutes)[number], agent = "writer-1") =>
  route.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === "agent_id" ? agent : name.endsWith("_id") && name !== "role_id" ? UNKNOWN_ID : "x"));

describe("request bodies, one rule for the whole catalogue (issue 23 items 10-12)", () => {
  const withBody = apiRoutes.filter((route) => route.body);

  it("answers a JSON null body with 400 naming the body on every operation that takes one; an absent body stays allowed where none is needed", async () => {
    expect(withBody.length).toBeGreaterThan(40);
    for (const route of withBody) {
      const res = await cluster.api(filledPath(route), { method: route.method.toUpperCase(), rawBody: "null", headers: { "Content-Type": "application/json" } });
      expect(res.status, `${route.operationId}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code).toBe("VALIDATION_FAILED");
      expect(res.body.message, route.operationId).toContain("null");
      expect(res.body.details.issues, route.operationId).toEqual([expect.objectContaining({ path: route.body })]);
    }
    // No body at all reads as {}: an operation that needs none goes on to the service (here: an unknown task, 404).
    const claim = await cluster.api(`/tasks/${UNKNOWN_ID}/claim`, { method: "POST", headers: { "Content-Type": "application/json" } });
    expect(claim.status, JSON.stringify(claim.body)).toBe(404);
  });

  it("refuses an unknown field in the body of every operation with 400 naming it", async () => {
    for (const route of withBody) {
      const body = REPRESENTATIVE_BODIES[route.operationId] as Record<string, unknown>;
      const res = await cluster.api(filledPath(route), { method: route.method.toUpperCase(), body: { ...body, unexpected_field: Array.from({ length: 1000 }, () => 1) }, headers: { "If-Match": "1" } });
      expect(res.status, `${route.operationId}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code, route.operationId).toBe("VALIDATION_FAILED");
      expect(JSON.stringify(res.body.details.issues), route.operationId).toContain("unexpected_field");
    }
  });

  it("checks an agent id the same way on every route that names one in its path, and in X-Agent-ID: *, .., role:x are no agent ids", async () => {
    const agentRoutes = apiRoutes.filter((route) => route.path.includes("{agent_id}"));
    expect(agentRoutes.map((r) => r.operationId)).toContain("memorySetCapacity");
    // `..` and `%2E%2E` are sent as written (fetch would resolve them as a dot segment; curl --path-as-is does not).
    for (const bad of ["*", "..", "%2E%2E", "role%3Areviewer", "a%20b"]) {
      for (const route of agentRoutes) {
        const body = route.body ? REPRESENTATIVE_BODIES[route.operationId] : undefined;
        const res = await rawRequest(route.method.toUpperCase(), `/api/v1${filledPath(route, bad)}`, body);
        expect(res.status, `${route.operationId} ${bad}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body?.code, `${route.operationId} ${bad}`).toBe("VALIDATION_FAILED");
        expect(JSON.stringify(res.body.details.issues), `${route.operationId} ${bad}`).toMatch(/agent_id/);
      }
      for (const path of [`/api/v1/subscribe/agents/${bad}`, `/api/v1/agents/${bad}/subscribe`]) expect((await rawRequest("GET", path)).status, path).toBe(400);
    }
    // The capacity route of the issue, by name: nothing is stored for such an id.
    for (const bad of ["*", "..", "%2E%2E", "role%3Ax"]) {
      const res = await rawRequest("PUT", `/api/v1/agents/${bad}/memory/capacity`, { episodic_capacity: 5 });
      expect(res.status, bad).toBe(400);
      expect(res.body.details.issues, bad).toEqual([expect.objectContaining({ path: "agent_id" })]);
    }
    expect((await cluster.api("/agents", { body: { agent_id: "*" }, key: "agent" })).status).toBe(400);
    expect((await cluster.api("/agents", { body: { agent_id: ".." }, key: "agent" })).status).toBe(400);
    const header = await cluster.api("/intents", { headers: { "X-Agent-ID": "*" } });
    expect(header.status).toBe(400);
    expect(header.body.code).toBe("VALIDATION_FAILED");
  });
});
