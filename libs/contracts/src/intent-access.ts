import type { CommandDef } from "./command";
import type { ErrorCode } from "./error-catalogue";
import { aclCommands, type IntentPermission } from "./acl";
import { writeCheckCommands } from "./write-checks";
import { intentsCommands } from "./subjects";
import { graphCommands } from "./graphs";
import { coordinatorCommands } from "./coordinators";
import { escalationCommands } from "./escalations";
import { governanceCommands, governancePolicyCommands } from "./governance";
import { portfoliosCommands } from "./portfolios";
import { suspensionCommands, suspensionRequestCommands } from "./suspension";
import { attachmentCommands } from "./attachments";
import { retryCommands } from "./retries";
import { costsCommands } from "./costs";
import { taskCommands } from "./tasks";
import { planCommands } from "./plans";
import { channelsCommands } from "./channels";
import { memoryCommands } from "./memory";
import { verifiableLogCommands } from "./verifiable-logs";
import { triggersCommands } from "./triggers";
import { tracingCommands } from "./tracing";

/**
 * What each command needs of an intent's access-control list (RFC-0011, docs/access-control.md):
 * the one place the permission of every intent-scoped command is written. The intents service
 * enforces it before its handlers run (services/intents/src/acl/guard.ts); the channels, memory
 * and governance services enforce it where they find the intent a resource belongs to, asking
 * the intents service (acl.check_many). Route roles stay the only role gate: an ACL narrows what
 * a role may do on one intent, and an intent without one is not narrowed at all.
 *
 * Every command of every group listed here has an entry (the type says so), so a new command
 * cannot be served before someone decides what it needs.
 *
 * - `needs` + `from`: the permission, and where the intent is found:
 *   `intent_id` the input's intent_id; `body.intent_id` the body's; `task_id` the task's intent;
 *   `plan_id` the plan's intent;
 *   `trace_id` the intent the trace was started on;
 *   `resource` the serving service reads the resource (a channel, a message, a memory entry) and
 *   checks the intent it belongs to.
 * - `open`: no permission of the intent is needed, and why.
 */
export type IntentAccessRule =
  | { readonly needs: IntentPermission; readonly from: "intent_id" | "body.intent_id" | "task_id" | "plan_id" | "trace_id" | "resource" }
  | { readonly open: string };

type RulesOf<G extends Record<string, CommandDef>> = { readonly [K in keyof G]: IntentAccessRule };

const read = { needs: "read", from: "intent_id" } as const;
const write = { needs: "write", from: "intent_id" } as const;
const admin = { needs: "admin", from: "intent_id" } as const;
const readResource = { needs: "read", from: "resource" } as const;
const writeResource = { needs: "write", from: "resource" } as const;
const SERVICE = { open: "asked by services on behalf of a caller they checked themselves" } as const;

const intents: RulesOf<typeof intentsCommands> = {
  create: { open: "a new intent has no ACL until its creator sets one (or sends one with it)" },
  get: read,
  list: { open: "lists only the intents the caller may read" },
  patchState: write,
  transition: admin,
  appendEvent: write,
  listEvents: read,
  assignAgent: admin,
  listAgents: read,
  unassignAgent: admin,
  acquireLease: write,
  renewLease: write,
  releaseLease: write,
  getLease: read,
  listLeases: read,
  leasesHeld: SERVICE,
};

// RFC-0002: the root of every graph query needs read, and the answers list only the intents
// the caller may read; decomposing an intent (a child) needs admin on the parent, as a task does;
// changing an intent's dependencies is writing to it (and the dependency must be readable).
const graphs: RulesOf<typeof graphCommands> = {
  createChild: admin,
  children: read,
  descendants: read,
  ancestors: read,
  dependencies: read,
  dependents: read,
  addDependency: write,
  removeDependency: write,
  ready: read,
  blocked: read,
  graph: read,
};

// RFC-0013: taking the coordinator lease of an intent and recording decisions on it write to it;
// a lease read by its id is checked against its intent in the handler (read); a heartbeat is the
// holder's alone (NOT_LEASE_HOLDER otherwise), whatever the ACL says since.
const coordinators: RulesOf<typeof coordinatorCommands> = {
  createLease: { needs: "write", from: "body.intent_id" },
  assign: write,
  getLease: { open: "the handler checks read on the lease's intent" },
  listLeases: read,
  heartbeat: { open: "only the holder may send it (checked in the handler)" },
  createDecisionRecord: { needs: "write", from: "body.intent_id" },
  listDecisionRecords: read,
  recordDecision: write,
  listDecisions: read,
  getGuardrails: { open: "the handler checks read on the lease's intent" },
  guardrailStatus: { open: "the handler checks read on the lease's intent" },
  patchGuardrails: { open: "the handler checks write on the lease's intent, and that the caller supervises the lease" },
  update: { open: "the handler checks write on the lease's intent, and that the caller holds or supervises the lease" },
  handoff: { open: "only the holder may hand its lease off (checked in the handler, with write on the intent)" },
  pause: { open: "the handler checks write on the lease's intent, and that the caller supervises the lease" },
  resume: { open: "the handler checks write on the lease's intent, and that the caller supervises the lease" },
  replace: { open: "the handler checks write on the lease's intent, and that the caller supervises the lease" },
  remove: write,
  forceEscalate: { open: "the handler checks write on the task's intent, and that the caller supervises its coordinator lease" },
  holder: SERVICE,
  coordinates: SERVICE,
  heldBy: SERVICE,
};

// Escalations and arbitration are approval requests (spec 4.6): asking is writing to the intent,
// resolving is deciding an approval (admin); a list shows the escalations of intents one may read.
const escalations: RulesOf<typeof escalationCommands> = {
  escalate: write,
  list: readResource,
  resolve: { needs: "admin", from: "resource" },
  arbitrate: write,
  arbitrationHistory: read,
};

const acl: RulesOf<typeof aclCommands> = {
  get: admin,
  set: admin,
  grant: admin,
  setPermissions: admin,
  grantPermission: admin,
  revoke: admin,
  createRequest: { open: "RFC-0011: a principal without access asks for it" },
  listRequests: { open: "an admin of the intent sees every request, anyone else only their own" },
  approveRequest: admin,
  denyRequest: admin,
  check: SERVICE,
  checkMany: SERVICE,
};

const writeChecks: RulesOf<typeof writeCheckCommands> = { check: SERVICE, checkMany: SERVICE };

const governancePolicy: RulesOf<typeof governancePolicyCommands> = { set: admin, get: read, remove: admin, check: SERVICE, checkMany: SERVICE };

const governance: RulesOf<typeof governanceCommands> = {
  createApproval: write,
  getApproval: read,
  listApprovals: read,
  approve: admin,
  deny: admin,
  decideEngagement: write,
  serverConfig: { open: "the platform's defaults, no intent" },
  grantedApprovals: SERVICE,
};

// The primitives behind POST /suspend and /suspend/respond hold the caller the governance service
// passes on to the routes' `write` themselves, under the intent's row lock they take anyway, so
// the governance service does not ask first (the timer's system caller is an admin).
const suspension: RulesOf<typeof suspensionCommands> = { begin: write, end: write };
const suspensionRequests: RulesOf<typeof suspensionRequestCommands> = { suspend: write, respond: write };

const portfolios: RulesOf<typeof portfoliosCommands> = {
  create: { open: "a portfolio is not an intent" },
  get: { open: "a portfolio is not an intent (its members are listed by id and status)" },
  list: { open: "a portfolio is not an intent" },
  update: { open: "a portfolio is not an intent" },
  addMember: { needs: "read", from: "body.intent_id" },
  removeMember: read,
  listEvents: { open: "a portfolio's own log" },
  ofIntent: read,
};

const attachments: RulesOf<typeof attachmentCommands> = { create: write, list: read, delete: write };
const retries: RulesOf<typeof retryCommands> = { putPolicy: admin, getPolicy: read, recordFailure: write, listFailures: read };
const costs: RulesOf<typeof costsCommands> = { record: write, list: read, setBudget: admin };

const tasks: RulesOf<typeof taskCommands> = {
  // RFC-0011: decomposing an intent (child intents) is admin; the work on a task is write.
  create: admin,
  get: { needs: "read", from: "task_id" },
  list: read,
  patch: { needs: "admin", from: "task_id" },
  claim: { needs: "write", from: "task_id" },
  start: { needs: "write", from: "task_id" },
  complete: { needs: "write", from: "task_id" },
  fail: { needs: "write", from: "task_id" },
  cancel: { needs: "admin", from: "task_id" },
  held: SERVICE,
};

// RFC 0012 with RFC-0011: planning an intent's work is admin, like creating its tasks; reading is read.
const plans: RulesOf<typeof planCommands> = {
  create: admin,
  decompose: admin,
  get: { needs: "read", from: "plan_id" },
  list: read,
  update: { needs: "admin", from: "plan_id" },
  // Deciding a checkpoint is work on the intent (write); a checkpoint's approvers narrow who.
  checkpoints: { needs: "read", from: "plan_id" },
  approveCheckpoint: { needs: "write", from: "plan_id" },
  rejectCheckpoint: { needs: "write", from: "plan_id" },
  // RFC-0013 2.1: the review gate is the supervisor's (checked in the handler), on work of the intent.
  supervisorApprove: { needs: "write", from: "plan_id" },
  supervisorReject: { needs: "write", from: "plan_id" },
};

const channels: RulesOf<typeof channelsCommands> = {
  create: write,
  list: read,
  get: readResource,
  patch: writeResource,
  delete: writeResource,
  send: writeResource,
  sendByName: write,
  listMessages: readResource,
  getMessage: readResource,
  reply: writeResource,
  ask: writeResource,
  // Acknowledging a message delivered to the caller is part of reading it.
  markRead: readResource,
  streamView: readResource,
};

const memory: RulesOf<typeof memoryCommands> = {
  create: writeResource,
  get: readResource,
  patch: writeResource,
  delete: writeResource,
  query: readResource,
  batch: writeResource,
  deleteBatch: writeResource,
  namespaces: { open: "semantic namespaces have their own permissions (4.8)" },
  getNamespace: { open: "semantic namespaces have their own permissions (4.8)" },
  patchNamespace: { open: "semantic namespaces have their own permissions (4.8)" },
  summary: { open: "counts of an agent's own memory" },
  lookup: readResource,
  put: writeResource,
  setCapacity: { open: "an agent's episodic capacity" },
};

// RFC 0019: verifying reports the intent's event ids and hashes, so it needs read. Checkpoints,
// proofs and consistency carry hashes, counts and signatures, never an event's content, and are
// the server's attestation to anyone (docs/verifiable-logs.md, "Access control").
const CHECKPOINT = { open: "a checkpoint holds hashes, counts and a signature, never an event's content" } as const;
const verifiableLogs: RulesOf<typeof verifiableLogCommands> = {
  verify: read,
  createCheckpoint: { open: "a server operation (admin keys): it attests the log and changes nothing of the intent" },
  listCheckpoints: CHECKPOINT,
  getCheckpoint: CHECKPOINT,
  proof: CHECKPOINT,
  consistency: CHECKPOINT,
  anchor: { open: "a server operation (admin keys) on a checkpoint" },
  hashChain: read,
  eventProof: CHECKPOINT,
  intentCheckpoint: CHECKPOINT,
  latestCheckpoint: CHECKPOINT,
};

// RFC-0017: global triggers are governed by route roles (creation is privileged, §Security 2);
// the MCP server's triggers scoped to an intent need write on it to be made or removed, read to be listed.
const GLOBAL_TRIGGER = { open: "a global trigger belongs to no intent; route roles govern it (RFC-0017 Security 2)" } as const;
const triggers: RulesOf<typeof triggersCommands> = {
  create: GLOBAL_TRIGGER,
  list: GLOBAL_TRIGGER,
  get: GLOBAL_TRIGGER,
  update: GLOBAL_TRIGGER,
  delete: GLOBAL_TRIGGER,
  fire: GLOBAL_TRIGGER,
  history: GLOBAL_TRIGGER,
  createScoped: write,
  listScoped: read,
  deleteScoped: write,
};

// RFC-0020: trace data is subject to the same access control as other event data (Security
// Considerations): starting a trace and linking spans write to the intent, reading needs read.
const tracing: RulesOf<typeof tracingCommands> = { start: write, get: read, linkSpans: { needs: "write", from: "trace_id" } };

/** The command groups and their rules, in the catalogue's order. */
export const intentAccessRules = [
  [intentsCommands, intents],
  [graphCommands, graphs],
  [coordinatorCommands, coordinators],
  [escalationCommands, escalations],
  [aclCommands, acl],
  [writeCheckCommands, writeChecks],
  [governancePolicyCommands, governancePolicy],
  [governanceCommands, governance],
  [suspensionCommands, suspension],
  [suspensionRequestCommands, suspensionRequests],
  [portfoliosCommands, portfolios],
  [attachmentCommands, attachments],
  [retryCommands, retries],
  [costsCommands, costs],
  [taskCommands, tasks],
  [planCommands, plans],
  [channelsCommands, channels],
  [memoryCommands, memory],
  [verifiableLogCommands, verifiableLogs],
  [triggersCommands, triggers],
  [tracingCommands, tracing],
] as const;

const bySubject: ReadonlyMap<string, IntentAccessRule> = new Map(
  intentAccessRules.flatMap(([group, rules]) => Object.entries(group).map(([key, def]) => [(def as CommandDef).subject, (rules as Record<string, IntentAccessRule>)[key]!] as const)),
);

/** The rule of a command; undefined for commands of groups with no intent-scoped command (registry, federation). */
export const intentAccessOf = (def: CommandDef): IntentAccessRule | undefined => bySubject.get(def.subject);

/** The permission a command needs of its intent, when it needs one. */
export const permissionNeeded = (def: CommandDef): IntentPermission | undefined => {
  const rule = intentAccessOf(def);
  return rule && "needs" in rule ? rule.needs : undefined;
};

/** The refusal of a caller without the permission an ACL asks. */
export const INTENT_ACCESS_DENIED: ErrorCode = "INTENT_ACCESS_DENIED";

/** The codes a command answers because of the ACL, besides its own: every command that needs a permission may be refused. */
export const accessErrorsOf = (def: CommandDef): readonly ErrorCode[] => (permissionNeeded(def) ? [INTENT_ACCESS_DENIED] : []);
