import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import type { ManualClock } from "@intentmesh/contracts";
import { IntentmeshError, type BodyOf, type Intentmesh } from "@intentmesh/sdk";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { allEvents, createIntent, expectError, expectRejected, isLeaseExpiry, statusOf, TIMESTAMP } from "../../../test/support/e2e-helpers";
import { agentHeaders } from "../../../test/support/agents";
import type { IntentsService } from "../src/service";

/**
 * The intents service's lease rules (spec 2.4, 3.6, 4.1): acquire, collide, renew, release, expiry by
 * the sweeper, leases under suspension and state writes under another agent's lease, through the
 * typed client of the route catalogue. The registry runs beside it only because the gateway asks
 * it whom an X-Agent-ID is bound to; sweeps run only when a test calls them.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
/** The typed client with the admin key. */
let admin: Intentmesh;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
    }),
  );
  admin = harness.sdk();
});
afterAll(async () => {
  await harness?.stop();
});

const clock = () => harness.clock as ManualClock;
/** The typed client acting as `agent` (registered with the agent key on first use). */
const as = async (agent: string) => {
  await agentHeaders(harness, agent);
  return harness.sdk("agent", agent);
};

const acquire = async (id: string, agent: string, scope: string, ttl = 60) =>
  (await as(agent)).send("intentsAcquireLease", { intent_id: id, body: { scope, ttl_seconds: ttl } });
const renew = async (id: string, leaseId: string, agent: string, ttl = 60) =>
  (await as(agent)).send("intentsRenewLease", { intent_id: id, lease_id: leaseId, body: { ttl_seconds: ttl } });
const release = async (id: string, leaseId: string, agent: string) => (await as(agent)).send("intentsReleaseLease", { intent_id: id, lease_id: leaseId });
const patchAs = async (id: string, agent: string, version: number, patches: BodyOf<"intentsPatchState">) =>
  (await as(agent)).send("intentsPatchState", { intent_id: id, ifMatch: version, body: patches });
async function setSuspended(id: string) {
  await harness.database.db.execute(sql`update intents.intents set status='suspended_awaiting_input' where id=${id}`);
}

describe("acquiring a lease", () => {
  it("answers 201 with acquired_at, expires_at = acquired_at + ttl, released_at null and no status field", async () => {
    const intent = await createIntent(harness);
    const res = await acquire(intent.id, "agent-a", "research", 90);
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ intent_id: intent.id, agent_id: "agent-a", scope: "research", released_at: null });
    expect(res.data).not.toHaveProperty("status");
    expect(res.data.acquired_at).toMatch(TIMESTAMP);
    expect(res.data.expires_at).toMatch(TIMESTAMP);
    expect(Date.parse(res.data.acquired_at)).toBe(clock().now().getTime());
    expect(Date.parse(res.data.expires_at) - Date.parse(res.data.acquired_at)).toBe(90_000);

    const read = await admin.send("intentsGetLease", { intent_id: intent.id, lease_id: res.data.id });
    expect(read.status).toBe(200);
    expect(read.data).toEqual(res.data);
  });

  it("answers 409 LEASE_HELD with the existing lease at the top level when the scope is held", async () => {
    const intent = await createIntent(harness);
    const first = await acquire(intent.id, "agent-a", "research");
    const second = await expectRejected(acquire(intent.id, "agent-b", "research"), 409, "LEASE_HELD");
    expect(second.body?.lease).toEqual(first.data);
    expect(second.body?.lease).not.toHaveProperty("status");
    // The holder itself cannot take the same scope twice either.
    await expectRejected(acquire(intent.id, "agent-a", "research"), 409, "LEASE_HELD");
  });

  it("makes overlapping scopes collide and lets disjoint ones coexist", async () => {
    const intent = await createIntent(harness);
    const research = await acquire(intent.id, "agent-a", "research");
    expect(research.status).toBe(201);

    const child = await expectRejected(acquire(intent.id, "agent-b", "research/notes"), 409, "LEASE_HELD");
    expect(child.body?.lease).toMatchObject({ id: research.data.id });
    await expectRejected(acquire(intent.id, "agent-b", "/research/notes/deep"), 409, "LEASE_HELD");
    await expectRejected(acquire(intent.id, "agent-b", "*"), 409, "LEASE_HELD");

    expect((await acquire(intent.id, "agent-b", "writing")).status).toBe(201);
    expect((await acquire(intent.id, "agent-c", "researcher")).status).toBe(201); // a sibling sharing a prefix of characters, not of path
    expect((await acquire(intent.id, "agent-d", "review/notes")).status).toBe(201);
    const parent = await expectRejected(acquire(intent.id, "agent-e", "review"), 409, "LEASE_HELD");
    expect(parent.body?.lease).toMatchObject({ scope: "review/notes" });

    const listed = await admin.send("intentsListLeases", { intent_id: intent.id });
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.data)).toEqual(["leases", "has_more"]);
    expect(listed.data.leases.map((l) => l.scope).sort()).toEqual(["research", "researcher", "review/notes", "writing"]);
    for (const l of listed.data.leases) expect(l).not.toHaveProperty("status");
  });

  it("grants a contested scope to exactly one of 10 concurrent agents", async () => {
    const intent = await createIntent(harness);
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => acquire(intent.id, `racer-${i}`, "contested")));
    const statuses = results.map((r) => (r.status === "fulfilled" ? r.value.status : r.reason instanceof IntentmeshError ? r.reason.status : r.reason)).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    const winner = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))[0]!;
    for (const r of results.flatMap((r) => (r.status === "rejected" ? [r.reason as IntentmeshError] : []))) {
      expect(r.code).toBe("LEASE_HELD");
      expect(r.body?.lease).toMatchObject({ id: winner.data.id });
    }
    const active = await admin.ops.intentsListLeases({ intent_id: intent.id, query: { active: true } });
    expect(active.leases.map((l) => l.id)).toEqual([winner.data.id]);
  });

  it("answers 404 for an unknown or malformed lease id of an existing intent", async () => {
    const intent = await createIntent(harness);
    expect(await statusOf(admin.send("intentsGetLease", { intent_id: intent.id, lease_id: "00000000-0000-4000-8000-000000000000" }))).toBe(404);
    expect(await statusOf(admin.send("intentsGetLease", { intent_id: intent.id, lease_id: "not-a-lease" }))).toBe(404);
    expect(await statusOf(renew(intent.id, "not-a-lease", "agent-a"))).toBe(404);
    expect(await statusOf(release(intent.id, "not-a-lease", "agent-a"))).toBe(404);
  });

  it("refuses a body without scope or with a ttl_seconds below 1 (400)", async () => {
    const intent = await createIntent(harness);
    // Raw: the types require a scope.
    expectError(await harness.rawApi(`/intents/${intent.id}/leases`, { body: { ttl_seconds: 10 } }), 400, "VALIDATION_FAILED");
    await expectRejected(admin.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "x", ttl_seconds: 0 } }), 400, "VALIDATION_FAILED");
  });
});

describe("renewing and releasing", () => {
  it("renew extends expires_at from now by ttl_seconds", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "renewable", 30);
    clock().advance(20_000);
    const renewed = await renew(intent.id, lease.data.id, "agent-a", 100);
    expect(renewed.status).toBe(200);
    expect(renewed.data.id).toBe(lease.data.id);
    expect(renewed.data.acquired_at).toBe(lease.data.acquired_at);
    expect(Date.parse(renewed.data.expires_at)).toBe(clock().now().getTime() + 100_000);
    expect(Date.parse(renewed.data.expires_at)).toBeGreaterThan(Date.parse(lease.data.expires_at));
    expect(renewed.data).not.toHaveProperty("status");

    // Past the original expiry, the renewed lease still holds its scope.
    clock().advance(30_000);
    await expectRejected(acquire(intent.id, "agent-b", "renewable"), 409, "LEASE_HELD");
  });

  it("release sets released_at, frees the scope and shows in the list", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "drafts");
    const released = await release(intent.id, lease.data.id, "agent-a");
    expect(released.status).toBe(200);
    expect(released.data.released_at).toMatch(TIMESTAMP);
    expect(Date.parse(released.data.released_at!)).toBe(clock().now().getTime());
    expect(released.data).not.toHaveProperty("status");

    const next = await acquire(intent.id, "agent-b", "drafts");
    expect(next.status).toBe(201);

    const listed = await admin.ops.intentsListLeases({ intent_id: intent.id });
    const byId = new Map(listed.leases.map((l) => [l.id, l]));
    expect(byId.get(lease.data.id)?.released_at).toBe(released.data.released_at);
    expect(byId.get(next.data.id)?.released_at).toBeNull();
    const active = await admin.ops.intentsListLeases({ intent_id: intent.id, query: { active: true } });
    expect(active.leases.map((l) => l.id)).toEqual([next.data.id]);

    const log = await allEvents(harness, intent.id);
    expect(log.map((e) => e.event_type)).toEqual(["intent_created", "lease_acquired", "lease_released", "lease_acquired"]);
  });

  it("only the holder renews; another agent gets 403 and the lease is unchanged", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "mine", 30);
    expect(await statusOf(renew(intent.id, lease.data.id, "agent-b", 600))).toBe(403);
    const read = await admin.ops.intentsGetLease({ intent_id: intent.id, lease_id: lease.data.id });
    expect(read.expires_at).toBe(lease.data.expires_at);
  });

  it("a released lease cannot be renewed", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "x");
    await release(intent.id, lease.data.id, "agent-a");
    expect(await statusOf(renew(intent.id, lease.data.id, "agent-a"))).toBe(412);
  });
});

describe("expiry", () => {
  it("frees the scope of an expired lease for another agent and logs its expiry (lease_released, reason expired)", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "research", 10);
    clock().advance(10_001);
    const next = await acquire(intent.id, "agent-b", "research", 10);
    expect(next.status).toBe(201);
    expect(next.data.agent_id).toBe("agent-b");

    const log = await allEvents(harness, intent.id);
    const expired = log.filter((e) => isLeaseExpiry(e));
    expect(expired).toHaveLength(1);
    expect(expired[0]!.payload).toMatchObject({ lease_id: lease.data.id, agent_id: "agent-a", scope: "research", reason: "expired" });
    expect(log.indexOf(expired[0]!)).toBeLessThan(log.map((e) => e.event_type).lastIndexOf("lease_acquired"));
  });

  it("a lease whose expires_at has passed cannot be renewed (412)", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "late", 5);
    clock().advance(6_000);
    await expectRejected(renew(intent.id, lease.data.id, "agent-a"), 412, "LEASE_EXPIRED");
  });

  it("refuses a state write under an expired lease by its former holder with 412 LEASE_EXPIRED", async () => {
    const intent = await createIntent(harness);
    await acquire(intent.id, "agent-a", "research", 10);
    const ok = await patchAs(intent.id, "agent-a", 1, [{ op: "set", path: "/research/x", value: 1 }]);
    expect(ok.status).toBe(200);
    clock().advance(11_000);
    await expectRejected(patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/x", value: 2 }]), 412, "LEASE_EXPIRED");
    const read = await admin.ops.intentsGet({ intent_id: intent.id });
    expect(read).toMatchObject({ version: 2, state: { research: { x: 1 } } });

    // Also after the sweeper has recorded the expiry.
    await harness.service.intents.sweeper.sweep();
    await expectRejected(patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/y", value: 1 }]), 412, "LEASE_EXPIRED");
  });

  it("refuses a state patch touching another agent's live lease with 409 LEASE_HELD; paths outside it are free", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "research", 60);
    const intrusion = await expectRejected(patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/research/notes", value: "mine" }]), 409, "LEASE_HELD");
    expect(intrusion.body?.lease).toMatchObject({ id: lease.data.id });
    await expectRejected(patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "", value: {} }]), 409, "LEASE_HELD");
    await expectRejected(patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/other", value: 1 }, { op: "set", path: "research", value: {} }]), 409, "LEASE_HELD");
    expect(await admin.ops.intentsGet({ intent_id: intent.id })).toMatchObject({ version: 1, state: {} });

    const free = await patchAs(intent.id, "agent-b", 1, [{ op: "set", path: "/other", value: 1 }]);
    expect(free.status).toBe(200);
    const holder = await patchAs(intent.id, "agent-a", 2, [{ op: "set", path: "/research/notes", value: "a" }]);
    expect(holder.status).toBe(200);
  });
});

describe("the lease sweeper", () => {
  it("expires lapsed leases after the clock passes expires_at and appends its expiry event", async () => {
    const intent = await createIntent(harness);
    const short = await acquire(intent.id, "agent-a", "short", 5);
    const long = await acquire(intent.id, "agent-b", "long", 3600);
    await harness.service.intents.sweeper.sweep();
    let log = await allEvents(harness, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);

    clock().advance(5_001);
    expect(await harness.service.intents.sweeper.sweep()).toBeGreaterThanOrEqual(1);
    log = await allEvents(harness, intent.id);
    const expired = log.filter((e) => isLeaseExpiry(e));
    expect(expired).toHaveLength(1);
    expect(expired[0]!.payload).toMatchObject({ lease_id: short.data.id, reason: "expired" });

    const active = await admin.ops.intentsListLeases({ intent_id: intent.id, query: { active: true } });
    expect(active.leases.map((l) => l.id)).toEqual([long.data.id]);

    // A second pass expires nothing more.
    await harness.service.intents.sweeper.sweep();
    log = await allEvents(harness, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(1);
    // The scope is free.
    expect((await acquire(intent.id, "agent-c", "short")).status).toBe(201);
  });

  it("skips leases of an intent in suspended_awaiting_input; their renewal succeeds past expires_at", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-a", "work", 5);
    await setSuspended(intent.id);
    clock().advance(60_000);
    await harness.service.intents.sweeper.sweep();
    let log = await allEvents(harness, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);

    // Still owned: another agent cannot take it.
    await expectRejected(acquire(intent.id, "agent-b", "work"), 409, "LEASE_HELD");

    const renewed = await renew(intent.id, lease.data.id, "agent-a", 30);
    expect(renewed.status).toBe(200);
    expect(Date.parse(renewed.data.expires_at)).toBe(clock().now().getTime() + 30_000);
    log = await allEvents(harness, intent.id);
    expect(log.filter((e) => isLeaseExpiry(e))).toHaveLength(0);
    expect(log.filter((e) => e.event_type === "lease_acquired").map((e) => e.payload.renewal)).toEqual([undefined, true]);
  });
});

describe("the official clients' spellings (issue 10)", () => {
  it("takes duration_seconds as an alias of ttl_seconds on acquire and on renew; two different values are 400 and grant nothing", async () => {
    const intent = await createIntent(harness);
    const agent = await as("agent-d");
    const res = await agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "draft", duration_seconds: 45 } });
    expect(res.status).toBe(201);
    expect(Date.parse(res.data.expires_at) - Date.parse(res.data.acquired_at)).toBe(45_000);
    const both = await expectRejected(agent.send("intentsAcquireLease", { intent_id: intent.id, body: { scope: "other", duration_seconds: 45, ttl_seconds: 60 } }), 400, "VALIDATION_FAILED");
    expect(both.body?.message).toContain("duration_seconds");
    const same = await agent.send("intentsRenewLease", { intent_id: intent.id, lease_id: res.data.id, body: { duration_seconds: 70, ttl_seconds: 70 } });
    expect(same.status).toBe(200);
    expect(Date.parse(same.data.expires_at)).toBe(clock().now().getTime() + 70_000);
    expect((await admin.ops.intentsListLeases({ intent_id: intent.id })).leases.map((l) => l.scope)).toEqual(["draft"]);
  });

  it("renews by PATCH /intents/{id}/leases/{lease_id} with {duration_seconds}, only by the holder", async () => {
    const intent = await createIntent(harness);
    const lease = await acquire(intent.id, "agent-p", "work", 30);
    clock().advance(10_000);
    const renewed = await (await as("agent-p")).send("intentsRenewLeaseByPatch", { intent_id: intent.id, lease_id: lease.data.id, body: { duration_seconds: 300 } });
    expect(renewed.status).toBe(200);
    expect(renewed.data).toMatchObject({ id: lease.data.id, agent_id: "agent-p", scope: "work", released_at: null });
    expect(Date.parse(renewed.data.expires_at)).toBe(clock().now().getTime() + 300_000);
    await expectRejected((await as("agent-q")).send("intentsRenewLeaseByPatch", { intent_id: intent.id, lease_id: lease.data.id, body: { duration_seconds: 300 } }), 403, "NOT_LEASE_HOLDER");
    const log = await allEvents(harness, intent.id);
    expect(log.filter((e) => e.event_type === "lease_acquired").map((e) => e.payload.renewal ?? false)).toEqual([false, true]);
  });

  it("lists leases as {leases: [...]}; a collision is 409 whose message mentions the lease and carries existing_lease", async () => {
    const intent = await createIntent(harness);
    const held = await acquire(intent.id, "agent-h", "notes");
    const listed = await admin.ops.intentsListLeases({ intent_id: intent.id });
    expect(Object.keys(listed)).toEqual(["leases", "has_more"]);
    expect(listed.leases.map((l) => l.id)).toEqual([held.data.id]);
    const collision = await expectRejected(acquire(intent.id, "agent-i", "notes"), 409, "LEASE_HELD");
    expect(collision.body?.message.toLowerCase()).toContain("lease");
    expect(collision.body?.existing_lease).toEqual(held.data);
    expect(collision.body?.lease).toEqual(held.data);
  });
});
