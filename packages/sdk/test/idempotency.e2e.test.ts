import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinnedConnector } from "@intentmesh/ssrf";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { startCuttingProxy, type CuttingProxy } from "../../../test/support/cutting-proxy";
import { allEvents, createIntent, uniqueTag } from "../../../test/support/e2e-helpers";
import { tripwire } from "../../../libs/ssrf/test/support";
import { createClient, isApiError, OutcomeUnknownError, updateIntentState, type Intentmesh } from "../src/index";

/**
 * Retries never apply a write twice. A proxy on loopback lets each request reach the gateway,
 * waits until the server has answered (the write is committed), and then kills the client's
 * connection instead of passing the answer on: the SDK sees exactly what a dropped network
 * answer looks like, and the logs show what the server applied.
 */
let cluster: TestCluster;
let peer: TestCluster;
let proxy: CuttingProxy;
let client: Intentmesh;
const wire = tripwire(pinnedConnector);

beforeAll(async () => {
  const federation = { allowLoopback: true, dispatchTimeoutMs: 10_000, connect: wire.connect, trustPolicy: "allowlist" as const };
  [cluster, peer] = await Promise.all([startTestCluster({ federation }), startTestCluster({ federation })]);
  cluster.federation.ctx.settings.peers.push({ server_url: peer.baseUrl, relationship: "downstream", api_key: TEST_KEYS.federation });
  peer.federation.ctx.settings.peers.push({ server_url: cluster.baseUrl, relationship: "upstream", api_key: TEST_KEYS.federation });
  proxy = await startCuttingProxy(cluster.baseUrl);
  client = createClient({ baseUrl: proxy.url, apiKey: TEST_KEYS.admin, retry: { baseDelayMs: 10 } });
});

afterAll(async () => {
  await proxy?.close();
  await Promise.all([cluster?.stop(), peer?.stop()]);
  expect(wire.tripped).toEqual([]);
});

const sentTo = (method: string, suffix: string) => proxy.requests.filter((r) => r.method === method && r.path.split("?")[0]!.endsWith(suffix));

describe("a write whose answer is lost after the server committed it", () => {
  it("an event append (no key, no If-Match) is never sent again: OUTCOME_UNKNOWN, one event in the log", async () => {
    const intent = await createIntent(cluster);
    proxy.dropAnswer((method, path) => method === "POST" && path.endsWith(`/intents/${intent.id}/events`));
    const failure = await client.ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "progress", payload: { step: 1 } } }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OutcomeUnknownError);
    expect(isApiError(failure, "OUTCOME_UNKNOWN")).toBe(true);
    expect(sentTo("POST", `/intents/${intent.id}/events`)).toEqual([expect.objectContaining({ status: 201, dropped: true })]);
    expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "progress")).toHaveLength(1);
  });

  it("a state patch with If-Match is replayed, cannot apply twice (the replay is a 409), and is reported as OUTCOME_UNKNOWN", async () => {
    const intent = await createIntent(cluster, { state: { items: [] } });
    proxy.dropAnswer((method, path) => method === "POST" && path.endsWith(`/intents/${intent.id}/state`));
    const failure = await client.ops.intentsPatchState({ intent_id: intent.id, ifMatch: intent.version, body: [{ op: "append", path: "/items", value: "once" }] }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OutcomeUnknownError);
    expect((failure as OutcomeUnknownError).replayError?.code).toBe("VERSION_MISMATCH");
    expect(sentTo("POST", `/intents/${intent.id}/state`).map((r) => [r.status, r.dropped])).toEqual([
      [200, true],
      [409, false],
    ]);
    const after = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
    expect(after.state.items).toEqual(["once"]);
    expect(after.version).toBe(intent.version + 1);
  });

  it("the optimistic-concurrency helper does not re-apply a change whose answer was lost", async () => {
    const intent = await createIntent(cluster, { state: { items: [] } });
    proxy.dropAnswer((method, path) => method === "POST" && path.endsWith(`/intents/${intent.id}/state`));
    const failure = await updateIntentState(client, intent.id, () => [{ op: "append", path: "/items", value: "once" }]).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OutcomeUnknownError);
    expect((await cluster.sdk().ops.intentsGet({ intent_id: intent.id })).state.items).toEqual(["once"]);
    // Without a fault the helper retries a real conflict: another writer slips in between its read and its write.
    const seen: number[] = [];
    const updated = await updateIntentState(client, intent.id, async (current) => {
      seen.push(current.version);
      if (seen.length === 1) {
        const other = await cluster.sdk().send("intentsPatchState", { intent_id: intent.id, ifMatch: current.version, body: [{ op: "append", path: "/items", value: "other" }] });
        expect(other.status).toBe(200);
      }
      return [{ op: "append", path: "/items", value: "mine" }];
    });
    expect(updated.state).toEqual({ items: ["once", "other", "mine"] });
    expect(seen).toEqual([seen[0], seen[0]! + 1]);
    // A bounded policy: a conflict on every attempt ends with the conflict itself.
    const stubborn = await updateIntentState(client, intent.id, async (current) => {
      await cluster.sdk().ops.intentsPatchState({ intent_id: intent.id, ifMatch: current.version, body: [{ op: "set", path: "/n", value: current.version }] });
      return [{ op: "append", path: "/items", value: "never" }];
    }, { attempts: 3, baseDelayMs: 1 }).catch((e: unknown) => e);
    expect(isApiError(stubborn, "VERSION_MISMATCH")).toBe(true);
    expect((await cluster.sdk().ops.intentsGet({ intent_id: intent.id })).state.items).not.toContain("never");
  });

  it("a lease release (DELETE) is replayed and answers the released lease once", async () => {
    const intent = await createIntent(cluster);
    const lease = await client.ops.intentsAcquireLease({ intent_id: intent.id, body: { scope: "draft", ttl_seconds: 60 } });
    proxy.dropAnswer((method, path) => method === "DELETE" && path.endsWith(`/leases/${lease.id}`));
    const released = await client.ops.intentsReleaseLease({ intent_id: intent.id, lease_id: lease.id });
    expect(released.released_at).not.toBeNull();
    expect(sentTo("DELETE", `/leases/${lease.id}`)).toHaveLength(2);
    expect((await allEvents(cluster, intent.id)).filter((e) => e.event_type === "lease_released")).toHaveLength(1);
  });

  it("a read is simply read again", async () => {
    const intent = await createIntent(cluster);
    proxy.dropAnswer((method, path) => method === "GET" && path.endsWith(`/intents/${intent.id}`), 2);
    expect((await client.ops.intentsGet({ intent_id: intent.id })).id).toBe(intent.id);
    expect(sentTo("GET", `/intents/${intent.id}`)).toHaveLength(3);
  });

  it("a federation dispatch carries an Idempotency-Key: the replay gets the first answer and the peer gets one intent", async () => {
    const intent = await createIntent(cluster, { title: uniqueTag("dispatched") });
    proxy.dropAnswer((method, path) => method === "POST" && path.endsWith("/federation/dispatch"));
    const result = await client.ops.federationDispatch({ body: { intent_id: intent.id, target_server: peer.baseUrl } });
    const attempts = sentTo("POST", "/federation/dispatch");
    expect(attempts.map((r) => r.dropped)).toEqual([true, false]);
    expect(result.remote_intent_id).toBeTruthy();
    const onPeer = (await peer.sdk().ops.intentsList({ query: { limit: 500 } })).intents.filter((i) => i.title === intent.title);
    expect(onPeer).toHaveLength(1);
    expect(onPeer[0]!.id).toBe(result.remote_intent_id);
  });
});
