import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRoutes, CLUSTER_SERVICES, healthCommand } from "@intentmesh/contracts";
import { REPLY_STATUS_HEADER } from "@intentmesh/bus";
import { listCommands } from "../../libs/contracts/src/subjects-doc";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { UNKNOWN_ID } from "../support/e2e-helpers";

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
