import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import type { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { allEvents, createIntent, expectError, isLeaseExpiry, TIMESTAMP } from "../support/e2e-helpers";
import { agentHeaders } from "../support/agents";

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

const clock = () => cluster.clock as ManualClock;
const as = (agent: string) => agentHeaders(cluster, agent);

const acquire = async (id: string, agent: string, scope: string, ttl = 60) =>
  cluster.api(`/intents/${id}/leases`, { body: { scope, ttl_seconds: ttl }, headers: await as(agent), key: null });
const renew = async (id: string, leaseId: string, agent: string, ttl = 60) =>
  cluster.api(`/intents/${id}/leases/${leaseId}/renew`, { body: { ttl_seconds: ttl }, headers: await as(agent), key: null });
const release = async (id: string, leaseId: string, agent: string) =>
  cluster.api(`/intents/${id}/leases/${leaseId}`, { method: "DELETE", headers: await as(agent), key: null });
const patchAs = async (id: string, agent: string, version: number, patches: unknown[]) =>
  cluster.api(`/intents/${id}/state`, { body: patches, headers: { ...(await as(agent)), "If-Match": String(version) }, key: null });

async function setSuspended(id: string) {
  await cluster.database.db.execute(sql`update intents.intents set status='suspended_awaiting_input' where id=${id}`);
}

describe("acquiring a lease", () => {
  it("answers 201 with acquired_at, expires_at = acquired_at + ttl, released_at null and no status field", async () => {
    const intent = await createIntent(cluster);
    const res = await acquire(intent.id, "agent-a", "research", 90);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ intent_id: intent.id, agent_id: "agent-a", scope: "research", released_at: null });
    expect(res.body).not.toHaveProperty("status");
    expect(res.body.acquired_at).toMatch(TIMESTAMP);
    expect(res.body.expires_at).toMatch(TIMESTAMP);
    expect(Date.parse(res.body.acquired_at)).toBe(clock().now().getTime());
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.acquired_at)).toBe(90_000);

    const read = await cluster.api(`/intents/${intent.id}/leases/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it("answers 409 LEASE_HELD with the existing lease at the top level when the scope is held", async () => {
    const intent = await createIntent(cluster);
    const first = await acquire(intent.id, "agent-a", "research");
    const second = await acquire(intent.id, "agent-b", "research");
    expectError(second, 409, "LEASE_HELD");
    expect(second.body.lease).toEqual(first.body);
    expect(second.body.lease).not.toHaveProperty("status");
    // The holder itself cannot take the same scope twice either.
    expectError(await acquire(intent.id, "agent-a", "research"), 409, "LEASE_HELD");
  });

  it("makes overlapping scopes collide and lets disjoint ones coexist", async () => {
    const intent = await createIntent(cluster);
    const research = await acquire(intent.id, "agent-a", "research");
    expect(research.status).toBe(201);

    const child = await acquire(intent.id, "agent-b", "research/notes");
    expectError(child, 409, "LEASE_HELD");
    expect(child.body.lease.id).toBe(research.body.id);
    expectError(await acquire(intent.id, "agent-b", "/research/notes/deep"), 409, "LEASE_HELD");
    expectError(await acquire(intent.id, "agent-b", "*"), 409, "LEASE_HELD");

    expect((await acquire(intent.id, "agent-b", "writing")).status).toBe(201);
    expect((await acquire(intent.id, "agent-c", "researcher")).status).toBe(201); // a sibling sharing a prefix of characters, not of path
    expect((await acquire(intent.id, "agent-d", "review/notes")).status).toBe(201);
    const parent = await acquire(intent.id, "agent-e", "review");
    expectError(parent, 409, "LEASE_HELD");
    expect(parent.body.lease.scope).toBe("review/notes");

    const listed = await cluster.api(`/intents/${intent.id}/leases`);
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body)).toEqual(["leases", "has_more"]);
    expect(listed.body.leases.map((l: any) => l.scope).sort()).toEqual(["research", "researcher", "review/notes", "writing"]);
    for (const l of listed.body.leases) expect(l).not.toHaveProperty("status");
  });

  it("grants a contested scope to exactly one of 10 concurrent agents", async () => {
    const intent = await createIntent(cluster);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => acquire(intent.id, `racer-${i}`, "contested")));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 201)!;
    for (const r of results.filter((r) => r.status === 409)) {
      expect(r.body.code).toBe("LEASE_HELD");
      expect(r.body.lease.id).toBe(winner.body.id);
    }
    const active = await cluster.api(`/intents/${intent.id}/leases?active=true`);
    expect(active.body.leases.map((l: any) => l.id)).toEqual([winner.body.id]);
  });

  it("answers 404 for an unknown or malformed lease id of an existing intent", async () => {
    const intent = await createIntent(cluster);
    expect((await cluster.api(`/intents/${intent.id}/leases/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await cluster.api(`/intents/${intent.id}/leases/not-a-lease`)).status).toBe(404);
    expect((await renew(intent.id, "not-a-lease", "agent-a")).status).toBe(404);
    expect((await release(intent.id, "not-a-lease", "agent-a")).status).toBe(404);
  });

  it("refuses a body without scope or with a ttl_seconds below 1 (400)", async () => {
    const intent = await createIntent(cluster);
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { ttl_seconds: 10 } }), 400, "VALIDATION_FAILED");
    expectError(await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "x", ttl_seconds: 0 } }), 400, "VALIDATION_FAILED");
  });
});

describe("renewing and releasing", () => {
  it("renew extends expires_at from now by ttl_seconds", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "renewable", 30);
    clock().advance(20_000);
    const renewed = await renew(intent.id, lease.body.id, "agent-a", 100);
    expect(renewed.status).toBe(200);
    expect(renewed.body.id).toBe(lease.body.id);
    expect(renewed.body.acquired_at).toBe(lease.body.acquired_at);
    expect(Date.parse(renewed.body.expires_at)).toBe(clock().now().getTime() + 100_000);
    expect(Date.parse(renewed.body.expires_at)).toBeGreaterThan(Date.parse(lease.body.expires_at));
    expect(renewed.body).not.toHaveProperty("status");

    // Past the original expiry, the renewed lease still holds its scope.
    clock().advance(30_000);
    expectError(await acquire(intent.id, "agent-b", "renewable"), 409, "LEASE_HELD");
  });

  it("release sets released_at, frees the scope and shows in the list", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "drafts");
    const released = await release(intent.id, lease.body.id, "agent-a");
    expect(released.status).toBe(200);
    expect(released.body.released_at).toMatch(TIMESTAMP);
    expect(Date.parse(released.body.released_at)).toBe(clock().now().getTime());
    expect(released.body).not.toHaveProperty("status");

    const next = await acquire(intent.id, "agent-b", "drafts");
    expect(next.status).toBe(201);

    const listed = await cluster.api(`/intents/${intent.id}/leases`);
    const byId = new Map(listed.body.leases.map((l: any) => [l.id, l]));
    expect((byId.get(lease.body.id) as any).released_at).toBe(released.body.released_at);
    expect((byId.get(next.body.id) as any).released_at).toBeNull();
    const active = await cluster.api(`/intents/${intent.id}/leases?active=true`);
    expect(active.body.leases.map((l: any) => l.id)).toEqual([next.body.id]);

    const log = await allEvents(cluster, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created", "lease_acquired", "lease_released", "lease_acquired"]);
  });

  it("only the holder renews; another agent gets 403 and the lease is unchanged", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "mine", 30);
    const res = await renew(intent.id, lease.body.id, "agent-b", 600);
    expect(res.status).toBe(403);
    const read = await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`);
    expect(read.body.expires_at).toBe(lease.body.expires_at);
  });

  it("a released lease cannot be renewed", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "x");
    await release(intent.id, lease.body.id, "agent-a");
    const res = await renew(intent.id, lease.body.id, "agent-a");
    expect(res.status).toBe(412);
  });
});

describe("expiry", () => {
  it("frees the scope of an expired lease for another agent and logs its expiry (lease_released, reason expired)", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "research", 10);
    clock().advance(10_001);
    const next = await acquire(intent.id, "agent-b", "research", 10);
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    expect(next.body.agent_id).toBe("agent-b");

    const log = await allEvents(cluster, intent.id);
    const expired = log.filter((e) => isLeaseExpiry(e));
    expect(expired).toHaveLength(1);
    expect(expired[0].payload).toMatchObject({ lease_id: lease.body.id, agent_id: "agent-a", scope: "research", reason: "expired" });
    expect(log.indexOf(expired[0])).toBeLessThan(log.map((e) => e.event_type).lastIndexOf("lease_acquired"));
  });

  it("a lease whose expires_at has passed cannot be renewed (412)", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "late", 5);
    clock().advance(6_000);
    const res = await renew(intent.id, lease.body.id, "agent-a");
    expectError(res, 412, "LEASE_EXPIRED");
  });

  it("refuses a state write under an expired lease by its former holder with 412 LEASE_EXPIRED", async () => {
    const intent = await createIntent(cluster);
    await acquire(intent.id, "agent-a", "research", 10);
    const ok = await patchAs(intent.id, "agent-a", 1, [{ op: "set", path: "/research/x", value: 1 }]);
    expect(ok.status).toBe(200);
    clock().advance(11_000);
    const late = await patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/x", value: 2 }]);
    expectError(late, 412, "LEASE_EXPIRED");
    const read = await cluster.api(`/intents/${intent.id}`);
    expect(read.body).toMatchObject({ version: 2, state: { research: { x: 1 } } });

    // Also after the sweeper has recorded the expiry.
    await cluster.intents.sweeper.sweep();
    expectError(await patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/y", value: 1 }]), 412, "LEASE_EXPIRED");
  });

  it("refuses a state patch touching another agent's live lease with 409 LEASE_HELD; paths outside it are free", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "research", 60);
    const intrusion = await patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/research/notes", value: "mine" }]);
    expectError(intrusion, 409, "LEASE_HELD");
    expect(intrusion.body.lease.id).toBe(lease.body.id);
    expectError(await patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "", value: {} }]), 409, "LEASE_HELD");
    expectError(await patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/other", value: 1 }, { op: "set", path: "research", value: {} }]), 409, "LEASE_HELD");
    expect((await cluster.api(`/intents/${intent.id}`)).body).toMatchObject({ version: 1, state: {} });

    const free = await patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/other", value: 1 }]);
    expect(free.status).toBe(200);
    const holder = await patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/notes", value: "a" }]);
    expect(holder.status).toBe(200);
  });
});

describe("the lease sweeper", () => {
  it("expires lapsed leases after the clock passes expires_at and appends its expiry event", async () => {
    const intent = await createIntent(cluster);
    const short = await acquire(intent.id, "agent-a", "short", 5);
    const long = await acquire(intent.id, "agent-b", "long", 3600);
    await cluster.intents.sweeper.sweep();
    let log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);

    clock().advance(5_001);
    expect(await cluster.intents.sweeper.sweep()).toBeGreaterThanOrEqual(1);
    log = await allEvents(cluster, intent.id);
    const expired = log.filter((e) => isLeaseExpiry(e));
    expect(expired).toHaveLength(1);
    expect(expired[0].payload).toMatchObject({ lease_id: short.body.id, reason: "expired" });

    const active = await cluster.api(`/intents/${intent.id}/leases?active=true`);
    expect(active.body.leases.map((l: any) => l.id)).toEqual([long.body.id]);

    // A second pass expires nothing more.
    await cluster.intents.sweeper.sweep();
    log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(1);
    // The scope is free.
    expect((await acquire(intent.id, "agent-c", "short")).status).toBe(201);
  });

  it("skips leases of an intent in suspended_awaiting_input; their renewal succeeds past expires_at", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-a", "work", 5);
    await setSuspended(intent.id);
    clock().advance(60_000);
    await cluster.intents.sweeper.sweep();
    let log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);

    // Still owned: another agent cannot take it.
    expectError(await acquire(intent.id, "agent-b", "work"), 409, "LEASE_HELD");

    const renewed = await renew(intent.id, lease.body.id, "agent-a", 30);
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(Date.parse(renewed.body.expires_at)).toBe(clock().now().getTime() + 30_000);
    log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);
    expect(log.filter((e) => e.event_type === "lease_acquired").map((e) => e.payload.renewal)).toEqual([undefined, true]);
  });
});

describe("the official clients' spellings (issue 10)", () => {
  it("takes duration_seconds as an alias of ttl_seconds on acquire and on renew; two different values are 400 and grant nothing", async () => {
    const intent = await createIntent(cluster);
    const headers = await as("agent-d");
    const res = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "draft", duration_seconds: 45 }, headers, key: null });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.acquired_at)).toBe(45_000);
    const both = await cluster.api(`/intents/${intent.id}/leases`, { body: { scope: "other", duration_seconds: 45, ttl_seconds: 60 }, headers, key: null });
    expectError(both, 400, "VALIDATION_FAILED");
    expect(both.body.message).toContain("duration_seconds");
    const same = await cluster.api(`/intents/${intent.id}/leases/${res.body.id}/renew`, { body: { duration_seconds: 70, ttl_seconds: 70 }, headers, key: null });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    expect(Date.parse(same.body.expires_at)).toBe(clock().now().getTime() + 70_000);
    expect((await cluster.api(`/intents/${intent.id}/leases`)).body.leases.map((l: any) => l.scope)).toEqual(["draft"]);
  });

  it("renews by PATCH /intents/{id}/leases/{lease_id} with {duration_seconds}, only by the holder", async () => {
    const intent = await createIntent(cluster);
    const lease = await acquire(intent.id, "agent-p", "work", 30);
    clock().advance(10_000);
    const renewed = await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`, { method: "PATCH", body: { duration_seconds: 300 }, headers: await as("agent-p"), key: null });
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(renewed.body).toMatchObject({ id: lease.body.id, agent_id: "agent-p", scope: "work", released_at: null });
    expect(Date.parse(renewed.body.expires_at)).toBe(clock().now().getTime() + 300_000);
    const stranger = await cluster.api(`/intents/${intent.id}/leases/${lease.body.id}`, { method: "PATCH", body: { duration_seconds: 300 }, headers: await as("agent-q"), key: null });
    expectError(stranger, 403, "NOT_LEASE_HOLDER");
    const log = await allEvents(cluster, intent.id);
    expect(log.filter((e) => e.event_type === "lease_acquired").map((e) => e.payload.renewal ?? false)).toEqual([false, true]);
  });

  it("lists leases as {leases: [...]}; a collision is 409 whose message mentions the lease and carries existing_lease", async () => {
    const intent = await createIntent(cluster);
    const held = await acquire(intent.id, "agent-h", "notes");
    const listed = await cluster.api(`/intents/${intent.id}/leases`);
    expect(Object.keys(listed.body)).toEqual(["leases", "has_more"]);
    expect(listed.body.leases.map((l: any) => l.id)).toEqual([held.body.id]);
    const collision = await acquire(intent.id, "agent-i", "notes");
    expectError(collision, 409, "LEASE_HELD");
    expect(collision.body.message.toLowerCase()).toContain("lease");
    expect(collision.body.existing_lease).toEqual(held.body);
    expect(collision.body.lease).toEqual(held.body);
  });
});
