import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRoutes, CLUSTER_SERVICES, intentAccessOf, type ApiRoute, type IntentPermission } from "@intentmesh/contracts";
import { startTestCluster, type TestCluster } from "../support/cluster";

/**
 * Generated from the route catalogue: every route whose command needs a permission of an intent
 * (libs/contracts intent-access.ts) is called by a principal holding the level below it (none for
 * read) on an intent with a closed ACL, and must answer 403 INTENT_ACCESS_DENIED having written
 * nothing (every service table hashes the same); granted the level, the same request answers its
 * normal success. A route the catalogue gains without a sample here fails the first test.
 *
 * The prober is the coordinator key (every such route admits it, and its role passes the
 * handlers' own role rules) acting as agent `probe`; its ACL entry names the key (`user`).
 */
let cluster: TestCluster;
let db: pg.Client;
let tables: string[];

const PROBE = { key: "coordinator" as const, headers: { "X-Agent-ID": "probe" } };

interface World {
  intentId: string;
  /** Made on demand, as admin (not bound by the ACL), before the prober's permission is set. */
  leaseId(): Promise<string>;
  attachmentId(): Promise<string>;
  task(status?: "pending" | "claimed" | "running"): Promise<{ id: string; version: number }>;
  plan(): Promise<{ id: string; version: number }>;
  /** A draft plan of an intent with a coordinator (agent `planner`): at the supervisor's review gate (the prober's coordinator key supervises). */
  reviewedPlan(): Promise<string>;
  /** A plan paused at its checkpoint cp_1 (awaiting approval). */
  pausedPlan(): Promise<{ id: string; version: number }>;
  approvalId(): Promise<string>;
  channelId(): Promise<string>;
  messageId(): Promise<string>;
  memoryEntry(): Promise<{ id: string; version: number }>;
  portfolioId(withMember: boolean): Promise<string>;
  suspensionId(): Promise<string>;
  entryId(): Promise<string>;
  requestId(): Promise<string>;
  traceId(): Promise<string>;
  version(): Promise<number>;
}

interface Sample {
  /** Path parameters besides intent_id; what the request carries. */
  prepare?(w: World): Promise<{ params?: Record<string, string>; body?: unknown; query?: string; ifMatch?: string }>;
  body?: unknown;
  query?: string;
  /** The status with the permission: 2xx, except channelsAsk's 504 (the request was sent; nobody answers the probe within its 1 s). */
  ok?: number;
}

const samples: Record<string, Sample> = {
  intentsGet: {},
  intentsPatchState: { prepare: async (w) => ({ body: [{ op: "set", path: "/x", value: 1 }], ifMatch: String(await w.version()) }) },
  intentsTransition: { prepare: async (w) => ({ body: { status: "blocked" }, ifMatch: String(await w.version()) }) },
  intentsAppendEvent: { body: { event_type: "comment", payload: {} }, ok: 201 },
  intentsListEvents: {},
  eventsVerify: {},
  eventsHashChain: { query: "from=1&to=5" },
  intentsAssignAgent: { body: { agent_id: "probe" }, ok: 201 },
  intentsListAgents: {},
  intentsUnassignAgent: {
    prepare: async (w) => {
      await admin(`/intents/${w.intentId}/agents`, { body: { agent_id: "worker" } });
      return { params: { agent_id: "worker" } };
    },
  },
  intentsAcquireLease: { body: { scope: "notes", ttl_seconds: 60 }, ok: 201 },
  intentsListLeases: {},
  intentsGetLease: { prepare: async (w) => ({ params: { lease_id: await w.leaseId() } }) },
  intentsRenewLease: { prepare: async (w) => ({ params: { lease_id: await w.leaseId() }, body: { ttl_seconds: 60 } }) },
  intentsRenewLeaseByPatch: { prepare: async (w) => ({ params: { lease_id: await w.leaseId() }, body: { ttl_seconds: 60 } }) },
  intentsReleaseLease: { prepare: async (w) => ({ params: { lease_id: await w.leaseId() } }) },
  attachmentsCreate: { body: { filename: "a.txt", mime_type: "text/plain", size: 1, storage_url: "https://files.example.com/a.txt" }, ok: 201 },
  attachmentsList: {},
  attachmentsDelete: { prepare: async (w) => ({ params: { attachment_id: await w.attachmentId() } }) },
  retriesPutPolicy: { body: { strategy: "fixed", max_retries: 2, base_delay_ms: 1000 } },
  retriesGetPolicy: {
    prepare: async (w) => {
      await admin(`/intents/${w.intentId}/retry-policy`, { method: "PUT", body: { strategy: "fixed", max_retries: 2, base_delay_ms: 1000 } });
      return {};
    },
  },
  retriesRecordFailure: { body: { agent_id: "probe", attempt_number: 1, error_code: "TIMEOUT", error_message: "slow" }, ok: 201 },
  retriesListFailures: {},
  portfoliosAddMember: { prepare: async (w) => ({ params: { portfolio_id: await w.portfolioId(false) }, body: { intent_id: w.intentId } }), ok: 201 },
  portfoliosRemoveMember: { prepare: async (w) => ({ params: { portfolio_id: await w.portfolioId(true) } }) },
  portfoliosOfIntent: {},
  costsRecord: { body: { agent_id: "probe", cost_type: "api_call", amount: 3, unit: "cents" }, ok: 201 },
  costsList: {},
  costsSetBudget: { prepare: async (w) => ({ body: { max_total_cents: 1000 }, ifMatch: String(await w.version()) }) },
  tasksCreate: { body: { title: "sub task" }, ok: 201 },
  tasksCreateWithIntentId: { prepare: async (w) => ({ body: { intent_id: w.intentId, title: "sub task" } }), ok: 201 },
  tasksList: {},
  tasksGet: { prepare: async (w) => ({ params: { task_id: (await w.task()).id } }) },
  tasksPatch: { prepare: async (w) => taskMove(await w.task(), { output: { draft: 1 } }) },
  tasksClaim: { prepare: async (w) => taskMove(await w.task(), {}) },
  tasksStart: { prepare: async (w) => taskMove(await w.task("claimed"), {}) },
  tasksComplete: { prepare: async (w) => taskMove(await w.task("running"), { output: { done: true } }) },
  tasksFail: { prepare: async (w) => taskMove(await w.task("running"), { error: "broken" }) },
  tasksCancel: { prepare: async (w) => taskMove(await w.task(), { reason: "not needed" }) },
  plansCreate: { prepare: async (w) => ({ body: { intent_id: w.intentId } }), ok: 201 },
  plansCreateForIntent: { body: { title: "plan", steps: [{ title: "step" }] }, ok: 201 },
  plansDecompose: { body: { task_description: "- one\n- two" }, ok: 201 },
  plansList: {},
  plansGetOfIntent: { prepare: async (w) => ({ params: { plan_id: (await w.plan()).id } }) },
  plansGet: { prepare: async (w) => ({ params: { plan_id: (await w.plan()).id } }) },
  plansCheckpoints: { prepare: async (w) => ({ params: { plan_id: (await w.plan()).id } }) },
  plansCheckpointApprove: { prepare: async (w) => ({ params: { plan_id: (await w.pausedPlan()).id, checkpoint_id: "cp_1" }, body: { comment: "fine" } }) },
  plansCheckpointReject: { prepare: async (w) => ({ params: { plan_id: (await w.pausedPlan()).id, checkpoint_id: "cp_1" }, body: { reason: "not yet" } }) },
  plansSupervisorApprove: { prepare: async (w) => ({ params: { plan_id: await w.reviewedPlan() }, body: { comment: "fine" } }) },
  plansSupervisorReject: { prepare: async (w) => ({ params: { plan_id: await w.reviewedPlan() }, body: { reason: "simplify" } }) },
  plansUpdate: { prepare: async (w) => {
    const plan = await w.plan();
    return { params: { plan_id: plan.id }, body: { metadata: { n: 1 } }, ifMatch: String(plan.version) };
  } },
  governancePolicySet: { prepare: async (w) => ({ body: { completion_mode: "auto" }, ifMatch: String(await w.version()) }) },
  governancePolicyGet: {},
  governancePolicyRemove: {
    prepare: async (w) => {
      const set = await admin(`/intents/${w.intentId}/governance`, { method: "PUT", headers: { "If-Match": String(await w.version()) }, body: { completion_mode: "auto" } });
      return { ifMatch: String(set.body.version) };
    },
  },
  governanceSuspend: { body: { question: "go on?", response_type: "confirm", fallback_policy: "fail" }, ok: 201 },
  governanceRespond: { prepare: async (w) => ({ body: { suspension_id: await w.suspensionId(), value: "yes" } }) },
  governanceCreateApproval: { body: { action: "complete" }, ok: 201 },
  governanceListApprovals: {},
  governanceGetApproval: { prepare: async (w) => ({ params: { approval_id: await w.approvalId() } }) },
  governanceApprove: { prepare: async (w) => ({ params: { approval_id: await w.approvalId() }, body: {} }) },
  governanceDeny: { prepare: async (w) => ({ params: { approval_id: await w.approvalId() }, body: {} }) },
  governanceDecideEngagement: { body: { confidence: 0.9, risk: 0.1, reversibility: 0.9 } },
  memoryCreate: { prepare: async (w) => ({ body: memoryBody(w.intentId, `created-${w.intentId}`) }), ok: 201 },
  memoryBatch: { prepare: async (w) => ({ body: { entries: [memoryBody(w.intentId, `batched-${w.intentId}`)] } }) },
  memoryDeleteBatch: {
    prepare: async (w) => {
      await w.memoryEntry();
      return { body: { scope: { intent_id: w.intentId } } };
    },
  },
  memoryQuery: {
    prepare: async (w) => {
      await w.memoryEntry();
      return { query: `agent_id=probe&scope.intent_id=${w.intentId}` };
    },
  },
  memoryGet: { prepare: async (w) => ({ params: { entry_id: (await w.memoryEntry()).id } }) },
  memoryPatch: {
    prepare: async (w) => {
      const entry = await w.memoryEntry();
      return { params: { entry_id: entry.id }, body: { value: { n: 2 } }, ifMatch: String(entry.version) };
    },
  },
  memoryDelete: { prepare: async (w) => ({ params: { entry_id: (await w.memoryEntry()).id } }) },
  memoryLookup: {
    prepare: async (w) => {
      await w.memoryEntry();
      return { params: { agent_id: "probe", namespace: "acl.probe", key: memoryKey(w.intentId) } };
    },
  },
  memoryPut: {
    prepare: async (w) => {
      const entry = await w.memoryEntry();
      return { params: { agent_id: "probe", namespace: "acl.probe", key: memoryKey(w.intentId) }, body: { value: { n: 3 } }, ifMatch: String(entry.version) };
    },
  },
  memoryListAgentNamespace: {
    prepare: async (w) => {
      await w.memoryEntry();
      return { params: { agent_id: "probe", namespace: "acl.probe" }, query: `scope.intent_id=${w.intentId}` };
    },
  },
  memoryListAgent: {
    prepare: async (w) => {
      await w.memoryEntry();
      return { params: { agent_id: "probe" }, query: `scope.intent_id=${w.intentId}` };
    },
  },
  channelsCreate: { body: { name: "probe-channel" }, ok: 201 },
  channelsList: {},
  channelsSendByName: { prepare: async () => ({ params: { name: "by-name" }, body: { message_type: "broadcast", payload: { hi: 1 } } }), ok: 201 },
  channelsGet: { prepare: async (w) => ({ params: { channel_id: await w.channelId() } }) },
  channelsPatch: { prepare: async (w) => ({ params: { channel_id: await w.channelId() }, body: { members: ["probe", "peer"] } }) },
  channelsDelete: { prepare: async (w) => ({ params: { channel_id: await w.channelId() } }) },
  channelsSend: { prepare: async (w) => ({ params: { channel_id: await w.channelId() }, body: { message_type: "broadcast", payload: { hi: 1 } } }), ok: 201 },
  channelsListMessages: { prepare: async (w) => ({ params: { channel_id: await w.channelId() } }) },
  channelsGetMessage: { prepare: async (w) => ({ params: { channel_id: await w.channelId(), message_id: await w.messageId() } }) },
  channelsReply: { prepare: async (w) => ({ params: { channel_id: await w.channelId(), message_id: await w.messageId() }, body: { payload: { ok: true } } }), ok: 201 },
  channelsAsk: { prepare: async (w) => ({ params: { channel_id: await w.channelId() }, body: { to: "peer", payload: { q: 1 }, timeout: 1 } }), ok: 504 },
  channelsMarkRead: { prepare: async (w) => ({ params: { channel_id: await w.channelId(), message_id: await w.messageId() }, body: { status: "read" } }) },
  graphCreateChild: { body: { title: "child" }, ok: 201 },
  graphChildren: {},
  graphDescendants: {},
  graphAncestors: {},
  graphDependencies: {},
  graphDependents: {},
  graphReady: {},
  graphBlocked: {},
  graphGet: {},
  graphAddDependency: {
    prepare: async (w) => {
      const other = await ok(await admin("/intents", { body: { title: "upstream" } }), "upstream");
      return { body: { dependency_id: other.id }, ifMatch: String(await w.version()) };
    },
  },
  graphRemoveDependency: {
    prepare: async (w) => {
      const other = await ok(await admin("/intents", { body: { title: "upstream" } }), "upstream");
      const added = await ok(await admin(`/intents/${w.intentId}/dependencies`, { headers: { "If-Match": String(await w.version()) }, body: { dependency_id: other.id } }), "dependency");
      return { params: { dependency_id: other.id }, ifMatch: String(added.version) };
    },
  },
  coordinatorsCreateLease: { prepare: async (w) => ({ body: { agent_id: "probe", intent_id: w.intentId } }), ok: 201 },
  coordinatorsAssign: { body: { coordinator_id: "probe", governance_policy: "default", set_by: "probe" }, ok: 201 },
  coordinatorsListForIntent: {},
  coordinatorsRemove: {
    prepare: async (w) => {
      await ok(await admin("/coordinators", { body: { agent_id: "probe", intent_id: w.intentId } }), "coordinator lease");
      return {};
    },
  },
  decisionsCreateRecord: {
    prepare: async (w) => {
      await ok(await admin("/coordinators", { body: { agent_id: "probe", intent_id: w.intentId } }), "coordinator lease");
      return { body: { coordinator_id: "probe", intent_id: w.intentId, decision_type: "plan_created", summary: "s", rationale: "r" } };
    },
    ok: 201,
  },
  decisionsListRecords: {},
  decisionsRecord: { body: { decision_type: "arbitration", outcome: "o", reasoning: "r" }, ok: 201 },
  decisionsList: {},
  escalationsCreate: { body: { reason: "stuck" }, ok: 201 },
  escalationsList: { prepare: async (w) => ({ query: `intent_id=${w.intentId}` }) },
  escalationsResolve: {
    prepare: async (w) => {
      const escalation = await ok(await admin(`/intents/${w.intentId}/escalations`, { headers: { "X-Agent-ID": "requester" }, body: { reason: "stuck" } }), "escalation");
      return { params: { escalation_id: escalation.id }, body: { resolution: "go on" } };
    },
  },
  arbitrationRequest: { body: { reason: "disagreement" }, ok: 201 },
  arbitrationHistory: {},
  aclGet: {},
  aclSet: { body: { default_policy: "closed", entries: [{ principal_id: "coordinator", principal_type: "user", permission: "admin" }] } },
  aclGrant: { body: { principal_id: "someone", permission: "read" }, ok: 201 },
  permissionsGet: {},
  permissionsSet: { body: { permissions: { default_policy: "closed", entries: [{ principal_id: "coordinator", principal_type: "user", permission: "admin" }] } } },
  permissionsGrant: { body: { agent_id: "someone", level: "read", scopes: ["*"] }, ok: 201 },
  aclRevoke: { prepare: async (w) => ({ params: { entry_id: await w.entryId() } }), ok: 204 },
  accessRequestApprove: { prepare: async (w) => ({ params: { request_id: await w.requestId() }, body: {} }) },
  accessRequestDeny: { prepare: async (w) => ({ params: { request_id: await w.requestId() }, body: {} }) },
  tracesStart: { body: { trace_name: "probe" }, ok: 201 },
  tracesGet: { prepare: async (w) => ({ params: { trace_id: await w.traceId() } }) },
  tracesLinkSpans: { prepare: async (w) => ({ params: { trace_id: await w.traceId() }, body: { spans: [{ span_id: "s1", operation: "probe" }] } }) },
  triggersCreateScoped: { body: { name: "probe", trigger_type: "state_change", condition: { to_state: "completed" }, action: { title: "probe" } }, ok: 201 },
  triggersListScoped: {},
  triggersDeleteScoped: {
    prepare: async (w) => {
      const trigger = await ok(await admin(`/intents/${w.intentId}/triggers`, { body: { trigger_type: "event", condition: { event: "intent.created" }, action: {} } }), "trigger");
      return { params: { trigger_id: trigger.trigger_id } };
    },
  },
};

const memoryKey = (intentId: string) => `k-${intentId}`;
const memoryBody = (intentId: string, key: string) => ({ agent_id: "probe", namespace: "acl.probe", key, value: { n: 1 }, memory_type: "episodic", scope: { intent_id: intentId } });
const taskMove = (task: { id: string; version: number }, body: unknown) => Promise.resolve({ params: { task_id: task.id }, body, ifMatch: String(task.version) });

const admin = (path: string, init: Parameters<TestCluster["api"]>[1] = {}) => cluster.api(path, { key: "admin", ...init });

async function ok(res: { status: number; body: any }, what: string) {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

function newWorld(intentId: string): World {
  const once = <T>(make: () => Promise<T>) => {
    let made: Promise<T> | undefined;
    return () => (made ??= make());
  };
  const channelId = once(async () => (await ok(await admin(`/intents/${intentId}/channels`, { body: { name: "fixture" } }), "channel")).id as string);
  const world: World = {
    intentId,
    version: async () => (await admin(`/intents/${intentId}`)).body.version,
    leaseId: once(async () => (await ok(await cluster.api(`/intents/${intentId}/leases`, { ...PROBE, key: "admin", body: { scope: "plan", ttl_seconds: 600 } }), "lease")).id),
    attachmentId: once(async () => (await ok(await admin(`/intents/${intentId}/attachments`, { body: { filename: "f.txt", mime_type: "text/plain", size: 1, storage_url: "https://files.example.com/f.txt" } }), "attachment")).id),
    task: async (status = "pending") => {
      let task = await ok(await admin(`/intents/${intentId}/tasks`, { body: { title: `task ${status}` } }), "task");
      if (status !== "pending") task = await ok(await cluster.api(`/tasks/${task.id}/claim`, { ...PROBE, key: "admin", headers: { ...PROBE.headers, "If-Match": String(task.version) }, body: {} }), "claim");
      if (status === "running") task = await ok(await cluster.api(`/tasks/${task.id}/start`, { ...PROBE, key: "admin", headers: { ...PROBE.headers, "If-Match": String(task.version) }, body: {} }), "start");
      return { id: task.id, version: task.version };
    },
    reviewedPlan: async () => {
      await ok(await admin("/coordinators", { body: { agent_id: "planner", intent_id: intentId } }), "coordinator lease");
      return (await ok(await admin("/plans", { body: { intent_id: intentId } }), "plan")).id;
    },
    plan: async () => {
      const plan = await ok(await admin("/plans", { body: { intent_id: intentId } }), "plan");
      return { id: plan.id, version: plan.version };
    },
    pausedPlan: async () => {
      const plan = await ok(await admin(`/intents/${intentId}/plans`, { body: { title: "gated", steps: [{ title: "a" }, { title: "b" }], checkpoints: [{ name: "gate", after_task: "a" }] } }), "gated plan");
      const first = plan.steps[0].task_id;
      for (const action of ["claim", "start", "complete"]) await ok(await admin(`/tasks/${first}/${action}`, { body: action === "complete" ? { output: {} } : {} }), action);
      const paused = await ok(await admin(`/plans/${plan.id}`), "paused plan");
      expect(paused.state).toBe("paused");
      return { id: paused.id, version: paused.version };
    },
    approvalId: once(async () => (await ok(await admin(`/intents/${intentId}/approvals`, { headers: { "X-Agent-ID": "requester" }, body: { action: "complete" } }), "approval")).id),
    channelId,
    messageId: once(async () => (await ok(await admin(`/channels/${await channelId()}/messages`, { headers: { "X-Agent-ID": "peer" }, body: { message_type: "request", to: "probe", payload: { q: 1 } } }), "message")).id),
    memoryEntry: once(async () => {
      const entry = await ok(await admin("/memory", { headers: { "X-Agent-ID": "probe" }, body: memoryBody(intentId, memoryKey(intentId)) }), "memory");
      return { id: entry.id, version: entry.version };
    }),
    portfolioId: async (withMember) => {
      const portfolio = await ok(await admin("/portfolios", { body: { name: `p-${intentId}` } }), "portfolio");
      if (withMember) await ok(await admin(`/portfolios/${portfolio.id}/intents`, { body: { intent_id: intentId } }), "member");
      return portfolio.id;
    },
    suspensionId: once(async () => {
      const suspended = await ok(await admin(`/intents/${intentId}/suspend`, { body: { question: "go on?", response_type: "confirm", fallback_policy: "fail" } }), "suspend");
      return suspended.state._suspension.id as string;
    }),
    entryId: once(async () => (await ok(await admin(`/intents/${intentId}/acl/entries`, { body: { principal_id: "someone", permission: "read" } }), "entry")).id),
    traceId: once(async () => (await ok(await admin(`/intents/${intentId}/traces`, { body: { trace_name: "fixture" } }), "trace")).trace_id as string),
    requestId: once(async () => (await ok(await cluster.api(`/intents/${intentId}/access-requests`, { key: "agent", headers: { "X-Agent-ID": "asker" }, body: { principal_id: "asker" } }), "request")).id),
  };
  return world;
}

const LOWER: Record<IntentPermission, IntentPermission | null> = { read: null, write: "read", admin: "write" };

const guardedRoutes = apiRoutes.filter((route) => {
  const rule = intentAccessOf(route.command);
  return rule !== undefined && "needs" in rule;
});

beforeAll(async () => {
  cluster = await startTestCluster();
  db = new pg.Client({ connectionString: cluster.databaseUrl });
  await db.connect();
  const rows = await db.query<{ t: string }>(
    "select table_schema || '.' || table_name as t from information_schema.tables where table_schema = any($1::text[]) and table_type = 'BASE TABLE' order by 1",
    [[...CLUSTER_SERVICES]],
  );
  // Inbox rows only record that a bus message was consumed (its effects are in the other tables):
  // consumers of every intent event (triggers) add them a moment after any write, whatever a refused request did.
  tables = rows.rows.map((r) => r.t).filter((t) => !t.endsWith(".inbox"));
}, 60_000);
afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

/**
 * Every row of every service table; the outbox by the rows it ever took (its identity sequence),
 * since the relay deletes each row it publishes.
 */
async function fingerprint(): Promise<string> {
  const parts = tables.map((t) =>
    t.endsWith(".outbox") ? `(select coalesce(pg_sequence_last_value(pg_get_serial_sequence('${t}', 'id')), 0)::text)` : `(select coalesce(md5(string_agg(x, ',' order by x)), '') from (select r::text as x from ${t} r) s)`,
  );
  const { rows } = await db.query<{ h: string }>(`select md5(concat_ws('|', ${parts.join(", ")})) as h`);
  return rows[0]!.h;
}

/** Writes of the fixtures may still be travelling through consumers: wait until nothing moves. */
async function settledFingerprint(): Promise<string> {
  let previous = await fingerprint();
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const next = await fingerprint();
    if (next === previous) return next;
    previous = next;
  }
  return previous;
}

async function call(route: ApiRoute, intentId: string, request: { params?: Record<string, string>; body?: unknown; query?: string; ifMatch?: string }) {
  const params: Record<string, string> = { intent_id: intentId, ...request.params };
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? `missing-${name}`));
  const headers: Record<string, string> = { ...PROBE.headers };
  if (request.ifMatch) headers["If-Match"] = request.ifMatch;
  return cluster.api(`${path}${request.query ? `?${request.query}` : ""}`, { key: PROBE.key, method: route.method.toUpperCase(), headers, body: request.body ?? (route.method === "get" || route.method === "delete" ? undefined : {}) });
}

describe("every intent-scoped route of the catalogue under an ACL", () => {
  it("has a sample request for every route whose command needs a permission", () => {
    expect(guardedRoutes.length).toBeGreaterThan(50);
    expect(guardedRoutes.map((route) => route.operationId).filter((id) => !(id in samples))).toEqual([]);
    expect(Object.keys(samples).filter((id) => !guardedRoutes.some((route) => route.operationId === id))).toEqual([]);
  });

  for (const route of guardedRoutes) {
    const rule = intentAccessOf(route.command) as { needs: IntentPermission };
    it(`${route.operationId} (${route.method.toUpperCase()} ${route.path}) needs ${rule.needs}`, async () => {
      const sample = samples[route.operationId]!;
      const created = await ok(await admin("/intents", { body: { title: `acl ${route.operationId}`, status: "active", acl: { default_policy: "closed" } } }), "intent");
      const world = newWorld(created.id);
      const prepared = { body: sample.body, query: sample.query, ...(await sample.prepare?.(world)) };
      const below = LOWER[rule.needs];
      if (below) await ok(await admin(`/intents/${created.id}/acl/entries`, { body: { principal_id: "coordinator", principal_type: "user", permission: below } }), "grant below");

      const before = await settledFingerprint();
      const refused = await call(route, created.id, prepared);
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.body).toMatchObject({ code: "INTENT_ACCESS_DENIED", details: { needed: rule.needs, held: below } });
      expect(await fingerprint(), `${route.operationId} was refused but wrote`).toBe(before);

      await ok(await admin(`/intents/${created.id}/acl/entries`, { body: { principal_id: "coordinator", principal_type: "user", permission: rule.needs } }), "grant");
      const allowed = await call(route, created.id, prepared);
      expect(allowed.status, `${route.operationId}: ${JSON.stringify(allowed.body)}`).toBe(sample.ok ?? route.status ?? 200);
    }, 30_000);
  }
});
