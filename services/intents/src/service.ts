import path from "node:path";
import { fileURLToPath } from "node:url";
import { graphCommands, tracingCommands, coordinatorCommands, aclCommands, planCommands, workflowCommands, verifiableLogCommands, attachmentCommands, taskCommands, costsCommands, portfoliosCommands, suspensionCommands, governancePolicyCommands, writeCheckCommands, intentsCommands as commands, retryCommands, streams, systemEventStream, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { openServiceCore, type HandlersOf } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { IntentsContext } from "./kernel/context";
import { outbox } from "./db/schema";
import { LeaseSweeper } from "./leases/sweeper";
import { CoordinatorStallSweeper } from "./coordinators/stall-sweeper";
import { supervisorReviewPlan } from "./plans/review";
import { forceEscalateTask, getGuardrails, guardrailStatus, handOffCoordinator, patchGuardrails, pauseCoordinator, removeCoordinator, replaceCoordinator, resumeCoordinator, updateCoordinator } from "./coordinators/supervision";
import { CheckpointSweeper, DEFAULT_CHECKPOINT_SCHEDULE, type CheckpointSchedule } from "./verifiable/sweeper";
import { anchorCheckpoint, consistency, createCheckpoint, getCheckpoint, inclusionProof, listCheckpoints, verifyLog } from "./verifiable/handlers";
import { addMember, createPortfolio, getPortfolio, listPortfolioEvents, listPortfolios, portfoliosOfIntent, removeMember, updatePortfolio } from "./portfolios/handlers";
import { beginSuspension, endSuspension } from "./suspension/handlers";
import { startPortfolioProjection, type PortfolioProjection } from "./portfolios/projection";
import { checkWrite, checkWriteMany } from "./acl/write-checks";
import { checkGovernanceFor, checkGovernanceMany, getGovernancePolicy, removeGovernancePolicy, setGovernancePolicy } from "./governance/handlers";
import { createIntent, getIntentReply, listIntents } from "./intents/handlers";
import { getTrace, linkSpans, startTrace } from "./tracing/handlers";
import { addDependency, createChildIntent, getGraph, listGraph, removeDependency } from "./graph/handlers";
import { assignCoordinator, coordinatorOf, intentsHeldBy, intentsCoordinatedFor, coordinatorHeartbeat, createCoordinatorLease, createDecisionRecord, getCoordinatorLease, listCoordinatorLeases, listDecisionRecords, listDecisions, recordDecision } from "./coordinators/handlers";
import { startReadinessProjection, type ReadinessProjection } from "./graph/projection";
import { patchState } from "./intents/patch-state";
import { transitionStatus } from "./intents/transition";
import { appendEvent, listEvents } from "./events/handlers";
import { assignAgent, listAssignments, unassignAgent } from "./assignments/handlers";
import { acquireLease, getLease, leasesHeldBy, listLeases, releaseLease, renewLease } from "./leases/handlers";
import { startAgentLifecycleProjection } from "./agents/lifecycle-projection";
import { startSystemEventConsumer } from "./events/system-event-consumer";
import { createAttachment, deleteAttachment, listAttachments } from "./attachments/handlers";
import { getRetryPolicy, putRetryPolicy } from "./failures/retry-policy";
import { listFailures, recordFailure } from "./failures/handlers";
import { listCosts, recordCost, setBudget } from "./costs/handlers";
import { IntentAccessGuard } from "./acl/guard";
import { AclExpirySweeper } from "./acl/sweeper";
import { approveAccessRequest, checkAccess, checkAccessMany, createAccessRequest, denyAccessRequest, getAcl, grantAccess, grantPermission, listAccessRequests, revokeAccess, setAcl, setPermissions } from "./acl/handlers";
import { eventProof, hashChain, intentCheckpoint, latestCheckpoint } from "./verifiable/intent-paths";
import { createWorkflow, getWorkflow, listWorkflows, triggerWorkflow, updateWorkflow, deleteWorkflow } from "./workflows/handlers";
import { createPlan, decomposeTask, getPlan, listPlans, updatePlan } from "./plans/handlers";
import { decideCheckpoint, listCheckpoints as listPlanCheckpoints, PlanCheckpointSweeper } from "./plans/checkpoints";
import { cancelTask, claimTask, completeTask, createTask, failTask, getTask, listTasks, patchTask, startTask, unknownTasksOf } from "./tasks/handlers";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface IntentsServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  leaseSweepIntervalMs?: number;
  /** When scheduled checkpoints of the event logs are made (RFC 0019 3.1). */
  checkpoints?: Partial<CheckpointSchedule>;
  relay?: Partial<RelayOptions>;
}

export interface IntentsService {
  ctx: IntentsContext;
  relay: OutboxRelay;
  sweeper: LeaseSweeper;
  checkpointSweeper: CheckpointSweeper;
  /** Ends expired access-control entries (access_expired). */
  aclSweeper: AclExpirySweeper;
  planCheckpointSweeper: PlanCheckpointSweeper;
  /** Logs coordinator.stalled (RFC-0013 require_progress_every_minutes). */
  coordinatorStallSweeper: CoordinatorStallSweeper;
  /** Portfolios follow their members through this consumer of status_changed. */
  portfolioProjection: PortfolioProjection;
  /** Dependents of a completed intent are announced ready (intent.ready) by this consumer of status_changed. */
  readinessProjection: ReadinessProjection;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the sweeper and the consumers. */
export async function startIntentsService(options: IntentsServiceOptions): Promise<IntentsService> {
  const core = await openServiceCore({
    name: "intents",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [streams.intents, streams.portfolios, streams.registry, systemEventStream],
    outbox,
  });
  const { bus, database, logger, relay } = core;
  const access = new IntentAccessGuard(database.query, core.clock);
  const ctx: IntentsContext = { db: database.db, query: database.query, clock: core.clock, logger, client: core.client, access, published: core.published };
  const sweeper = new LeaseSweeper(ctx, options.leaseSweepIntervalMs ?? 1000);
  const checkpointSweeper = new CheckpointSweeper(ctx, { ...DEFAULT_CHECKPOINT_SCHEDULE, ...options.checkpoints });
  // ACL entries expire on the lease sweeper's cadence (LEASE_SWEEP_INTERVAL_MS).
  const aclSweeper = new AclExpirySweeper(ctx, options.leaseSweepIntervalMs ?? 1000);
  // Plan checkpoints time out on the same cadence (timeout_hours are hours; a second is plenty).
  const planCheckpointSweeper = new PlanCheckpointSweeper(ctx, options.leaseSweepIntervalMs ?? 1000);
  // Coordinator stalls are minutes; the lease sweeper's cadence is plenty.
  const coordinatorStallSweeper = new CoordinatorStallSweeper(ctx, options.leaseSweepIntervalMs ?? 1000);
  // Every group goes through the access guard (acl/guard.ts): each command's rule from the
  // catalogue (libs/contracts intent-access.ts) is checked before its handler; get, appendEvent
  // and patchState check after the read they make anyway, the task moves in their transaction.
  const serve: typeof core.serve = (group, handlers) => core.serve(group, access.wrap(group, handlers));

  const intentHandlers: HandlersOf<typeof commands> = {
    create: (input, caller) => createIntent(ctx, input.body, caller, input.intent_id),
    get: (input, caller) => getIntentReply(ctx, input.intent_id, caller),
    list: (input, caller) => listIntents(ctx, input.query, caller),
    patchState: (input, caller) => patchState(ctx, input.intent_id, input.if_match, input.patches, caller),
    transition: (input, caller) => transitionStatus(ctx, input.intent_id, input.if_match, input.body, caller),
    appendEvent: (input, caller) => appendEvent(ctx, input.intent_id, input.if_match, input.body, caller),
    listEvents: (input) => listEvents(ctx, input.intent_id, input.query),
    assignAgent: (input, caller) => assignAgent(ctx, input.intent_id, input.if_match, input.body, caller),
    listAgents: (input) => listAssignments(ctx, input.intent_id),
    unassignAgent: (input, caller) => unassignAgent(ctx, input.intent_id, input.if_match, input.agent_id, caller),
    acquireLease: (input, caller) => acquireLease(ctx, input.intent_id, input.if_match, input.body, caller),
    renewLease: (input, caller) => renewLease(ctx, input.intent_id, input.if_match, input.lease_id, input.body, caller),
    releaseLease: (input, caller) => releaseLease(ctx, input.intent_id, input.if_match, input.lease_id, caller),
    getLease: (input) => getLease(ctx, input.intent_id, input.lease_id),
    listLeases: (input) => listLeases(ctx, input.intent_id, input.query.active === "true"),
    leasesHeld: (input) => leasesHeldBy(ctx, input.agent_ids),
  };
  core.serve(commands, access.wrap(commands, intentHandlers, ["get", "appendEvent", "patchState"]));
  serve(graphCommands, {
    createChild: (input, caller) => createChildIntent(ctx, input.intent_id, input.body, caller),
    children: (input, caller) => listGraph(ctx, "children", input.intent_id, input.query, caller),
    descendants: (input, caller) => listGraph(ctx, "descendants", input.intent_id, input.query, caller),
    ancestors: (input, caller) => listGraph(ctx, "ancestors", input.intent_id, input.query, caller),
    dependencies: (input, caller) => listGraph(ctx, "dependencies", input.intent_id, input.query, caller),
    dependents: (input, caller) => listGraph(ctx, "dependents", input.intent_id, input.query, caller),
    addDependency: (input, caller) => addDependency(ctx, input.intent_id, input.if_match, input.body, caller),
    removeDependency: (input, caller) => removeDependency(ctx, input.intent_id, input.if_match, input.dependency_id, caller),
    ready: (input, caller) => listGraph(ctx, "ready", input.intent_id, input.query, caller),
    blocked: (input, caller) => listGraph(ctx, "blocked", input.intent_id, input.query, caller),
    graph: (input, caller) => getGraph(ctx, input.intent_id, input.query, caller),
  });
  serve(tracingCommands, {
    start: (input, caller) => startTrace(ctx, input.intent_id, input.body, caller),
    get: (input) => getTrace(ctx, input.intent_id, input.trace_id),
    linkSpans: (input, caller) => linkSpans(ctx, input.trace_id, input.body, caller),
  });
  serve(coordinatorCommands, {
    createLease: (input, caller) => createCoordinatorLease(ctx, input.body, caller),
    assign: (input, caller) => assignCoordinator(ctx, input.intent_id, input.body, caller),
    getLease: (input, caller) => getCoordinatorLease(ctx, input.lease_id, caller),
    listLeases: (input) => listCoordinatorLeases(ctx, input.intent_id),
    heartbeat: (input, caller) => coordinatorHeartbeat(ctx, input.lease_id, caller),
    createDecisionRecord: (input, caller) => createDecisionRecord(ctx, input.body, caller),
    listDecisionRecords: (input) => listDecisionRecords(ctx, input.intent_id, input.query.limit),
    recordDecision: (input, caller) => recordDecision(ctx, input.intent_id, input.body, caller),
    listDecisions: (input) => listDecisions(ctx, input.intent_id, input.query.limit),
    getGuardrails: (input, caller) => getGuardrails(ctx, input.lease_id, caller),
    guardrailStatus: (input, caller) => guardrailStatus(ctx, input.lease_id, caller),
    patchGuardrails: (input, caller) => patchGuardrails(ctx, input.lease_id, input.if_match, input.body, caller),
    update: (input, caller) => updateCoordinator(ctx, input.lease_id, input.if_match, input.body, caller),
    handoff: (input, caller) => handOffCoordinator(ctx, input.lease_id, input.if_match, input.body, caller),
    pause: (input, caller) => pauseCoordinator(ctx, input.lease_id, input.if_match, input.body, caller),
    resume: (input, caller) => resumeCoordinator(ctx, input.lease_id, input.if_match, caller),
    replace: (input, caller) => replaceCoordinator(ctx, input.lease_id, input.if_match, input.body, caller),
    remove: (input, caller) => removeCoordinator(ctx, input.intent_id, input.if_match, caller),
    forceEscalate: (input, caller) => forceEscalateTask(ctx, input.task_id, input.body, caller),
    holder: (input) => coordinatorOf(ctx, input.intent_id),
    coordinates: (input) => intentsCoordinatedFor(ctx, input.coordinator, input.agent_id),
    heldBy: (input) => intentsHeldBy(ctx, input.agent_id),
  });
  serve(aclCommands, {
    get: (input) => getAcl(ctx, input.intent_id),
    set: (input, caller) => setAcl(ctx, input.intent_id, input.body, caller),
    grant: (input, caller) => grantAccess(ctx, input.intent_id, input.body, caller),
    setPermissions: (input, caller) => setPermissions(ctx, input.intent_id, input.if_match, input.body, caller),
    grantPermission: (input, caller) => grantPermission(ctx, input.intent_id, input.body, caller),
    revoke: (input, caller) => revokeAccess(ctx, input.intent_id, input.entry_id, caller),
    createRequest: (input, caller) => createAccessRequest(ctx, input.intent_id, input.body, caller),
    listRequests: (input, caller) => listAccessRequests(ctx, input.intent_id, input.query, caller),
    approveRequest: (input, caller) => approveAccessRequest(ctx, input.intent_id, input.request_id, input.body, caller),
    denyRequest: (input, caller) => denyAccessRequest(ctx, input.intent_id, input.request_id, input.body, caller),
    check: (input, caller) => checkAccess(ctx, input.intent_id, input.permission, caller),
    checkMany: (input) => checkAccessMany(ctx, input.checks),
  });
  serve(writeCheckCommands, {
    check: (input, caller) => checkWrite(ctx, input.intent_id, input.permission, input.kind, caller),
    checkMany: (input) => checkWriteMany(ctx, input.checks),
  });
  serve(governancePolicyCommands, {
    set: (input, caller) => setGovernancePolicy(ctx, input.intent_id, input.if_match, input.body, caller),
    get: (input) => getGovernancePolicy(ctx, input.intent_id),
    remove: (input, caller) => removeGovernancePolicy(ctx, input.intent_id, input.if_match, caller),
    check: (input, caller) => checkGovernanceFor(ctx, input.intent_id, input.kind, caller),
    checkMany: (input) => checkGovernanceMany(ctx, input.checks),
  });
  serve(portfoliosCommands, {
    create: (input, caller) => createPortfolio(ctx, input.body, caller),
    get: (input) => getPortfolio(ctx, input.portfolio_id),
    list: (input) => listPortfolios(ctx, input.query),
    update: (input, caller) => updatePortfolio(ctx, input.portfolio_id, input.if_match, input.body, caller),
    addMember: (input, caller) => addMember(ctx, input.portfolio_id, input.if_match, input.body, caller),
    removeMember: (input, caller) => removeMember(ctx, input.portfolio_id, input.if_match, input.intent_id, caller),
    listEvents: (input) => listPortfolioEvents(ctx, input.portfolio_id, input.query),
    ofIntent: (input) => portfoliosOfIntent(ctx, input.intent_id, input.query),
  });
  // Both check the caller's permission under the row lock they take, from the ACL policy it reads.
  core.serve(
    suspensionCommands,
    access.wrap(
      suspensionCommands,
      {
        begin: (input, caller) => beginSuspension(ctx, input, caller),
        end: (input, caller) => endSuspension(ctx, input, caller),
      },
      ["begin", "end"],
    ),
  );
  serve(attachmentCommands, {
    create: (input, caller) => createAttachment(ctx, input.intent_id, input.if_match, input.body, caller),
    list: (input) => listAttachments(ctx, input.intent_id, input.query),
    delete: (input, caller) => deleteAttachment(ctx, input.intent_id, input.if_match, input.attachment_id, caller),
  });
  serve(retryCommands, {
    putPolicy: (input) => putRetryPolicy(ctx, input.intent_id, input.if_match, input.body),
    getPolicy: (input) => getRetryPolicy(ctx, input.intent_id),
    recordFailure: (input, caller) => recordFailure(ctx, input.intent_id, input.if_match, input.body, caller),
    listFailures: (input) => listFailures(ctx, input.intent_id, input.query),
  });
  // record checks the caller's permission with the ACL flag its own statement reads (costs/handlers.ts).
  core.serve(
    costsCommands,
    access.wrap(
      costsCommands,
      {
        record: (input, caller) => recordCost(ctx, input.intent_id, input.body, caller),
        list: (input) => listCosts(ctx, input.intent_id, input.query),
        setBudget: (input, caller) => setBudget(ctx, input.intent_id, input.if_match, input.body, caller),
      },
      ["record"],
    ),
  );
  // The task moves read the access facts with the task under the intent's lock (tasks/moves.ts):
  // one statement fewer than the guard's own before the handler.
  const taskHandlers: HandlersOf<typeof taskCommands> = {
    create: (input, caller) => createTask(ctx, input.intent_id, input.body, caller),
    get: (input) => getTask(ctx, input.task_id),
    list: (input) => listTasks(ctx, input.intent_id, input.query),
    patch: (input, caller) => patchTask(ctx, input.task_id, input.if_match, input.body, caller),
    claim: (input, caller) => claimTask(ctx, input.task_id, input.if_match, caller),
    start: (input, caller) => startTask(ctx, input.task_id, input.if_match, caller),
    complete: (input, caller) => completeTask(ctx, input.task_id, input.if_match, input.body, caller),
    fail: (input, caller) => failTask(ctx, input.task_id, input.if_match, input.body, caller),
    cancel: (input, caller) => cancelTask(ctx, input.task_id, input.if_match, input.body, caller),
    held: (input) => unknownTasksOf(ctx, input.agent_id, input.task_ids),
  };
  core.serve(taskCommands, access.wrap(taskCommands, taskHandlers, ["claim", "start", "complete", "fail", "cancel"]));
  serve(planCommands, {
    create: (input, caller) => createPlan(ctx, input.intent_id, input.body, caller),
    decompose: (input, caller) => decomposeTask(ctx, input.intent_id, input.body, caller),
    get: (input) => getPlan(ctx, input.plan_id, input.intent_id),
    list: (input) => listPlans(ctx, input.intent_id, input.query),
    update: (input, caller) => updatePlan(ctx, input.plan_id, input.if_match, input.body, caller),
    checkpoints: (input) => listPlanCheckpoints(ctx, input.plan_id),
    supervisorApprove: (input, caller) => supervisorReviewPlan(ctx, input.plan_id, { kind: "approve", comment: input.body.comment ?? null }, caller),
    supervisorReject: (input, caller) => supervisorReviewPlan(ctx, input.plan_id, { kind: "reject", reason: input.body.reason }, caller),
    approveCheckpoint: (input, caller) => decideCheckpoint(ctx, input.plan_id, input.checkpoint_id, { kind: "approve" }, caller),
    rejectCheckpoint: (input, caller) => decideCheckpoint(ctx, input.plan_id, input.checkpoint_id, { kind: "reject", reason: input.body.reason ?? null }, caller),
  });
  serve(workflowCommands, {
    create: (input, caller) => createWorkflow(ctx, input.body, caller),
    get: (input) => getWorkflow(ctx, input.workflow_id),
    list: (input) => listWorkflows(ctx, input.query),
    trigger: (input, caller) => triggerWorkflow(ctx, input.workflow_id, input.body, caller),
    update: (input) => updateWorkflow(ctx, input.workflow_id, input.if_match, input.body),
    delete: (input) => deleteWorkflow(ctx, input.workflow_id, input.if_match),
  });
  serve(verifiableLogCommands, {
    verify: (input) => verifyLog(ctx, input.intent_id),
    createCheckpoint: (input) => createCheckpoint(ctx, input.body.intent_id),
    listCheckpoints: (input) => listCheckpoints(ctx, input.query),
    getCheckpoint: (input) => getCheckpoint(ctx, input.checkpoint_id),
    proof: (input) => inclusionProof(ctx, input.checkpoint_id, input.event_id),
    consistency: (input) => consistency(ctx, input.query.from_checkpoint, input.query.to_checkpoint),
    anchor: (input) => anchorCheckpoint(ctx, input.checkpoint_id, input.body),
    hashChain: (input) => hashChain(ctx, input.intent_id, input.query),
    eventProof: (input) => eventProof(ctx, input.intent_id, input.event_id),
    intentCheckpoint: (input) => intentCheckpoint(ctx, input.intent_id, input.checkpoint_id),
    latestCheckpoint: (input) => latestCheckpoint(ctx, input.intent_id),
  });
  const agentLifecycle = await startAgentLifecycleProjection(bus, database.db, ctx.clock, logger, core.published);
  const systemEvents = await startSystemEventConsumer(bus, database.db, ctx.clock, logger, core.published);
  const portfolioProjection = await startPortfolioProjection(ctx, bus);
  const readinessProjection = await startReadinessProjection(ctx, bus);
  const running = core.launch({ workers: [sweeper, aclSweeper, checkpointSweeper, planCheckpointSweeper, coordinatorStallSweeper], running: [agentLifecycle, systemEvents, portfolioProjection, readinessProjection] });
  return { ctx, relay, sweeper, aclSweeper, checkpointSweeper, planCheckpointSweeper, coordinatorStallSweeper, portfolioProjection, readinessProjection, stop: running.stop };
}
