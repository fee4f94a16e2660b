import type { ZodType } from "zod";
import { z } from "./zod";
import { COMMON_ROUTE_ERRORS } from "./api-route";
import type { ErrorCode } from "./error-catalogue";
import { apiRoutes } from "./api/index";
import { channelsCommands } from "./channels";
import { federationCommands } from "./federation";
import { governanceCommands, governancePolicyCommands } from "./governance";
import { intentsCommands } from "./subjects";
import { suspensionCommands } from "./portfolios";
import { taskCommands } from "./tasks";
import { registryCommands, AgentBinding } from "./registry";
import { Intent } from "./intents";
import { SignatureCheck, vaultCommands } from "./vault";
import {
  CallbackReceipt,
  ChannelStreamViewSchema,
  DidDocument,
  FederationDiscovery,
  GovernanceAllowed,
  GovernanceVerdicts,
  GrantedApprovals,
  LeasesHeld,
  ReceiveAnswer,
  ServerConfig,
  UnknownTasks,
} from "./responses";

/** What the commands without a REST route of their own answer (the others: their route's `response`). */
const busOnlyOutputs: ReadonlyMap<string, ZodType> = new Map<string, ZodType>([
  [channelsCommands.streamView.subject, ChannelStreamViewSchema],
  [federationCommands.callback.subject, CallbackReceipt],
  [federationCommands.did.subject, DidDocument],
  [federationCommands.discovery.subject, FederationDiscovery],
  [federationCommands.receive.subject, ReceiveAnswer],
  [governanceCommands.grantedApprovals.subject, GrantedApprovals],
  [governanceCommands.serverConfig.subject, ServerConfig],
  [governancePolicyCommands.check.subject, GovernanceAllowed],
  [governancePolicyCommands.checkMany.subject, GovernanceVerdicts],
  [intentsCommands.leasesHeld.subject, LeasesHeld],
  [suspensionCommands.begin.subject, Intent],
  [suspensionCommands.end.subject, Intent],
  [taskCommands.held.subject, UnknownTasks],
  [registryCommands.binding.subject, AgentBinding],
  [vaultCommands.checkSignature.subject, SignatureCheck],
]);

/**
 * The error codes the commands without a REST route answer, besides the common ones (the
 * others: their route's `errors`). Gathered from every test run and from the handlers' code.
 */
const SIGNED = ["FEDERATION_DISABLED", "SIGNATURE_INVALID", "UNTRUSTED_SERVER", "SSRF_BLOCKED"] as const;
const busOnlyErrors: ReadonlyMap<string, readonly ErrorCode[]> = new Map<string, readonly ErrorCode[]>([
  [channelsCommands.streamView.subject, ["CHANNEL_NOT_FOUND", "NOT_A_MEMBER"]],
  [federationCommands.callback.subject, [...SIGNED, "DISPATCH_NOT_FOUND", "VALIDATION_ERROR"]],
  [federationCommands.did.subject, ["FEDERATION_DISABLED"]],
  [federationCommands.discovery.subject, ["FEDERATION_DISABLED"]],
  [federationCommands.receive.subject, [...SIGNED, "AGENT_NOT_FOUND", "FEDERATION_LOOP", "DELEGATION_DEPTH_EXHAUSTED", "DISPATCH_IN_PROGRESS", "IDEMPOTENCY_KEY_REUSED", "VALIDATION_ERROR"]],
  [governanceCommands.grantedApprovals.subject, []],
  [governanceCommands.serverConfig.subject, []],
  [governancePolicyCommands.check.subject, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND"]],
  // Each check's refusal travels inside the answer; the request fails as a whole only when those
  // verdicts are too large for one answer (the asker then checks one by one), or with a 503/500.
  [governancePolicyCommands.checkMany.subject, ["REPLY_TOO_LARGE"]],
  [intentsCommands.leasesHeld.subject, []],
  [suspensionCommands.begin.subject, ["INTENT_NOT_FOUND", "INVALID_TRANSITION", "SUSPENSION_PAST_DUE_BEFORE", "VERSION_MISMATCH", "SUSPENSION_ACTIVE"]],
  [suspensionCommands.end.subject, ["INTENT_NOT_FOUND", "NOT_SUSPENDED", "SUSPENSION_MISMATCH", "VERSION_MISMATCH"]],
  [taskCommands.held.subject, []],
  [registryCommands.binding.subject, ["AGENT_NOT_FOUND"]],
  [vaultCommands.checkSignature.subject, []],
]);

/** Codes a routed command answers only to the services that call it over the bus. */
const internalOnlyErrors: ReadonlyMap<string, readonly ErrorCode[]> = new Map<string, readonly ErrorCode[]>([
  // Creating under a chosen id (federation's receive after a crash): the id is taken by another creator.
  [intentsCommands.create.subject, ["INTENT_EXISTS"]],
]);

/** The error codes of every bus command: its own list, or the union of its routes' declarations. */
export const commandErrors: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const out = new Map<string, Set<string>>();
  for (const [subject, codes] of [...busOnlyErrors, ...internalOnlyErrors]) out.set(subject, new Set([...codes, ...COMMON_ROUTE_ERRORS]));
  for (const route of apiRoutes) {
    const set = out.get(route.command.subject) ?? new Set<string>(COMMON_ROUTE_ERRORS);
    for (const code of route.errors) set.add(code);
    out.set(route.command.subject, set);
  }
  return out;
})();

/**
 * The output schema of every bus command: its own (bus-only commands) or its REST route's
 * response. A command behind several routes with different answers (memory's query answers a page
 * on GET /memory and a bare list on the clients' routes) takes them all as a union.
 */
export const commandOutputs: ReadonlyMap<string, ZodType> = (() => {
  const out = new Map<string, ZodType>(busOnlyOutputs);
  const byCommand = new Map<string, ZodType[]>();
  for (const route of apiRoutes) {
    if (!route.response) continue;
    const list = byCommand.get(route.command.subject) ?? [];
    if (!list.includes(route.response)) list.push(route.response);
    byCommand.set(route.command.subject, list);
  }
  for (const [subject, schemas] of byCommand) out.set(subject, schemas.length === 1 ? schemas[0]! : z.union(schemas as [ZodType, ZodType, ...ZodType[]]));
  return out;
})();

/** The output schema of a command, by subject. */
export const commandOutputSchema = (subject: string): ZodType | undefined => commandOutputs.get(subject);
