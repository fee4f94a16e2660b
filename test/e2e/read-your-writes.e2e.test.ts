import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Server } from "node:http";
import { connectBus, type Bus } from "@intentmesh/bus";
import { createLogger } from "@intentmesh/telemetry";
import { createClient, IntentmeshError, type Intentmesh } from "@intentmesh/sdk";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";
import { createGateway, type Gateway } from "../../services/gateway/src/app";
import { ApiKeys } from "../../services/gateway/src/api-keys";
import { startIntentsService, type IntentsService } from "../../services/intents/src/service";
import { startMemoryService, type MemoryService } from "../../services/memory/src/service";
import { startChannelsService, type ChannelsService } from "../../services/channels/src/service";

/**
 * Read-your-writes across replicas (issue 32): a read that starts after a write was answered sees
 * that write, also when the write went through one gateway and the read goes through another, and
 * either may be served by either replica of the service. The services keep no cache of what they
 * serve (every read is a statement on the PostgreSQL primary, and a write answers after its
 * commit), so this holds by construction; the test holds it against any cache added later.
 */
let cluster: TestCluster;
let secondBus: Bus;
let secondGateway: Gateway;
let replicas: { intents: IntentsService; memory: MemoryService; channels: ChannelsService };
/** Writes go through the cluster's gateway, reads through the second one. */
let writer: Intentmesh;
let reader: Intentmesh;
let secondUrl: string;

const ROUNDS = 25;

beforeAll(async () => {
  cluster = await startTestCluster();
  const logger = createLogger("replica", "silent");
  secondBus = await connectBus(inject("natsUrl"), "replica", cluster.namespace);
  secondBus.checks = cluster.bus.checks;
  const common = { bus: secondBus, database: cluster.database, logger, clock: cluster.clock };
  replicas = {
    intents: await startIntentsService({ ...common, leaseSweepIntervalMs: 3_600_000, checkpoints: { intervalMs: 3_600_000 } }),
    memory: await startMemoryService({ ...common, sweepIntervalMs: 3_600_000 }),
    channels: await startChannelsService({ ...common, sweepIntervalMs: 3_600_000 }),
  };
  secondGateway = await createGateway({
    bus: secondBus,
    keys: new ApiKeys([
      { key: TEST_KEYS.admin, principal: "admin", roles: ["admin"] },
      { key: TEST_KEYS.agent, principal: "agent-1", roles: ["agent"] },
    ]),
    logger,
  });
  const server: Server = await secondGateway.listen(0, "127.0.0.1");
  const address = server.address();
  secondUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  writer = cluster.sdk("admin");
  // No retry on the reading side: a stale answer must not be hidden by a second attempt.
  reader = createClient({ baseUrl: secondUrl, apiKey: TEST_KEYS.admin, retry: { attempts: 1 } });
});
afterAll(async () => {
  await secondGateway?.stop();
  for (const service of Object.values(replicas ?? {})) await service.stop();
  await secondBus?.close();
  await cluster?.stop();
});

describe("a read that starts after a write was answered sees it, through the other gateway and either replica", () => {
  it("intent state and version", async () => {
    const created = await writer.send("intentsCreate", { body: { title: "read your writes", status: "active" } });
    let version = created.version!;
    for (let round = 1; round <= ROUNDS; round++) {
      const patched = await writer.send("intentsPatchState", { intent_id: created.data.id, ifMatch: version, body: [{ op: "set", path: "round", value: round }] });
      version = patched.version!;
      const read = await reader.ops.intentsGet({ intent_id: created.data.id });
      expect(read.version).toBe(version);
      expect(read.state).toEqual({ round });
    }
  });

  it("the event log", async () => {
    const intent = await writer.ops.intentsCreate({ body: { title: "a log read back", status: "active" } });
    for (let round = 1; round <= ROUNDS; round++) {
      const appended = await writer.ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "step", payload: { round } } });
      const page = await reader.ops.intentsListEvents({ intent_id: intent.id, query: { after: String(appended.sequence - 1) } });
      expect(page.events.map((event) => event.id)).toEqual([appended.id]);
    }
  });

  it("memory entries", async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const created = await writer.ops.memoryCreate({ body: { namespace: "ryw", key: `fact-${round}`, value: { round }, memory_type: "semantic" } });
      const read = await reader.ops.memoryGet({ entry_id: created.id });
      expect(read.value).toEqual({ round });
    }
  });

  it("channel messages", async () => {
    const intent = await writer.ops.intentsCreate({ body: { title: "a channel read back", status: "active" } });
    const channel = await writer.ops.channelsCreate({ intent_id: intent.id, body: { name: "ryw" } });
    for (let round = 1; round <= ROUNDS; round++) {
      const sent = await writer.ops.channelsSend({ channel_id: channel.id, body: { message_type: "notify", payload: { round } } });
      const page = await reader.ops.channelsListMessages({ channel_id: channel.id, query: { limit: 500 } });
      expect(page.map((message) => message.id)).toContain(sent.id);
    }
  });

  it("an access-control change binds the next request at once (no permission cache)", async () => {
    const agentReader = createClient({ baseUrl: secondUrl, apiKey: TEST_KEYS.agent, agentId: "agent-1", retry: { attempts: 1 } });
    for (let round = 1; round <= 5; round++) {
      const intent = await writer.ops.intentsCreate({ body: { title: `closed ${round}`, status: "active" } });
      expect((await agentReader.ops.intentsGet({ intent_id: intent.id })).id).toBe(intent.id);
      await writer.ops.aclSet({ intent_id: intent.id, body: { default_policy: "closed", entries: [] } });
      const refused = await agentReader.ops.intentsGet({ intent_id: intent.id }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(IntentmeshError);
      expect((refused as IntentmeshError).status).toBe(403);
    }
  });

  it("a membership change binds the next message on either channels replica (a remembered channel row decides nothing)", async () => {
    const member = createClient({ baseUrl: secondUrl, apiKey: TEST_KEYS.agent, agentId: "agent-1", retry: { attempts: 1 } });
    const intent = await writer.ops.intentsCreate({ body: { title: "members read back", status: "active" } });
    const channel = await writer.ops.channelsCreate({ intent_id: intent.id, body: { name: "members", member_policy: "explicit", members: ["agent-1"] } });
    const send = (round: number) => member.send("channelsSend", { channel_id: channel.id, body: { payload: { round } } });
    for (let round = 1; round <= 5; round++) {
      // Several sends, so both replicas have sent to the channel and remember its row.
      for (let n = 0; n < 4; n++) expect((await send(round)).status).toBe(201);
      await writer.ops.channelsPatch({ channel_id: channel.id, body: { members: ["someone-else"] } });
      const refused = await send(round).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(IntentmeshError);
      expect((refused as IntentmeshError).code).toBe("NOT_A_MEMBER");
      await writer.ops.channelsPatch({ channel_id: channel.id, body: { members: ["agent-1"] } });
    }
  });
});
