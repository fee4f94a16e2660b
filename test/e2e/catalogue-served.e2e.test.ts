import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLUSTER_SERVICES, healthCommand } from "@intentmesh/contracts";
import { REPLY_STATUS_HEADER } from "@intentmesh/bus";
import { listCommands } from "../../libs/contracts/src/subjects-doc";
import { startTestCluster, type TestCluster } from "../support/cluster";

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
