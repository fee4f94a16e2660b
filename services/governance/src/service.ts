import path from "node:path";
import { fileURLToPath } from "node:url";
import { escalationCommands, governanceCommands as commands, suspensionRequestCommands, streams, systemEventStream, type Caller, type Clock, type HumanRetryPolicy } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { IntentAccessChecks, openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { GovernanceContext } from "./context";
import { outbox } from "./db/schema";
import { respond, suspend } from "./handlers/suspension";
import { createApproval, decideApproval, getApproval, grantedApprovals, listApprovals, toApproval } from "./handlers/approvals";
import { arbitrationHistory, escalate, escalationIntents, listEscalations, requestArbitration, resolveEscalation } from "./handlers/escalations";
import { engagementDecision } from "./handlers/engagement";
import { SuspensionTimer } from "./timer";
import { startSuspensionTracker } from "./tracker";
import { SettledSuspensions } from "./tracking";
import { startCoordinatorEscalations } from "./coordinator-escalations";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface GovernanceServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** How often the suspension timer looks for due suspensions; default 1 s. */
  timerIntervalMs?: number;
  /** The platform default human retry policy (SUSPENSION_DEFAULT_RETRY_POLICY). */
  defaultRetryPolicy?: HumanRetryPolicy | null;
  relay?: Partial<RelayOptions>;
}

export interface GovernanceService {
  ctx: GovernanceContext;
  relay: OutboxRelay;
  timer: SuspensionTimer;
  stop(): Promise<void>;
}

const SYSTEM_CALLER: Caller = { principal: "governance", roles: ["admin"], actor: "system", agent_id: null };

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the tracker and the timer. */
export async function startGovernanceService(options: GovernanceServiceOptions): Promise<GovernanceService> {
  const core = await openServiceCore({
    name: "governance",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [streams.intents, systemEventStream],
    outbox,
  });
  const { database, logger, relay } = core;
  const ctx: GovernanceContext = {
    db: database.db,
    clock: core.clock,
    logger,
    client: core.client,
    defaultRetryPolicy: options.defaultRetryPolicy ?? null,
    systemCaller: SYSTEM_CALLER,
    settled: new SettledSuspensions(),
    published: core.published,
  };
  const timer = new SuspensionTimer(ctx, options.timerIntervalMs ?? 1000);

  // Every command names its intent: each is checked against the intent's ACL first (RFC-0011),
  // here or by the intents service.
  const access = new IntentAccessChecks(core.client);
  // Served without asking first: the primitives they call (suspension.begin, .end) hold the caller
  // to the same `write` under the intent's row lock (intent-access.ts).
  core.serve(suspensionRequestCommands, {
    suspend: (input, caller) => suspend(ctx, input, caller),
    respond: (input, caller) => respond(ctx, input, caller, () => access.assert(caller, input.intent_id, "write")),
  });
  core.serve(commands, access.wrap(commands, {
    createApproval: (input, caller) => createApproval(ctx, input.intent_id, input.body, caller),
    getApproval: (input) => getApproval(ctx, input.intent_id, input.approval_id),
    listApprovals: (input) => listApprovals(ctx, input.intent_id, input.query),
    approve: async (input, caller) => toApproval(await decideApproval(ctx, input, "approved", caller)),
    deny: async (input, caller) => toApproval(await decideApproval(ctx, input, "denied", caller)),
    serverConfig: async () => ({ protocol_version: "0.1", suspension: { default_retry_policy: ctx.defaultRetryPolicy } }),
    grantedApprovals: (input) => grantedApprovals(ctx, input.intent_id, input.action),
    decideEngagement: (input, caller) => engagementDecision(ctx, input.intent_id, input.body, caller),
  }));
  core.serve(
    escalationCommands,
    access.wrap(
      escalationCommands,
      {
        escalate: (input, caller) => escalate(ctx, input.intent_id, input.body, caller),
        list: (input, caller) => listEscalations(ctx, input.query, caller, (intentId) => access.assert(caller, intentId, "read")),
        resolve: (input, caller) => resolveEscalation(ctx, input.escalation_id, input.body, caller),
        arbitrate: (input, caller) => requestArbitration(ctx, input.intent_id, input.body, caller),
        arbitrationHistory: (input) => arbitrationHistory(ctx, input.intent_id, input.query.limit),
      },
      (command, input: { query?: { intent_id?: string }; escalation_id?: string }) => escalationIntents(ctx, command, input),
    ),
  );
  const tracker = await startSuspensionTracker(ctx, core.bus);
  const escalations = await startCoordinatorEscalations(ctx, core.bus);
  const running = core.launch({ workers: [timer], running: [tracker, escalations] });
  return { ctx, relay, timer, stop: running.stop };
}
