import type { ZodType } from "zod";
import { z } from "./zod";
import { apiRoutes } from "./api/index";
import { channelsCommands } from "./channels";
import { federationCommands } from "./federation";
import { governanceCommands, governancePolicyCommands } from "./governance";
import { intentsCommands } from "./subjects";
import { suspensionCommands } from "./portfolios";
import { taskCommands } from "./tasks";
import { registryCommands, AgentBinding } from "./registry";
import { Intent } from "./intents";
import {
  CallbackReceipt,
  ChannelStreamViewSchema,
  DidDocument,
  FederationDiscovery,
  GovernanceAllowed,
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
  [intentsCommands.leasesHeld.subject, LeasesHeld],
  [suspensionCommands.begin.subject, Intent],
  [suspensionCommands.end.subject, Intent],
  [taskCommands.held.subject, UnknownTasks],
  [registryCommands.binding.subject, AgentBinding],
]);

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
