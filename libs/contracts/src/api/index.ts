import type { ApiRoute } from "../api-route";
import type { z } from "../zod";
import { intentsRoutes } from "./intents";
import { graphRoutes } from "./graphs";
import { coordinatorRoutes } from "./coordinators";
import { escalationRoutes } from "./escalations";
import { agentRoutes } from "./registry";
import { attachmentsRoutes } from "./attachments";
import { retriesRoutes } from "./retries";
import { portfoliosRoutes } from "./portfolios";
import { costsRoutes } from "./costs";
import { tasksRoutes } from "./tasks";
import { governanceRoutes } from "./governance";
import { suspensionRoutes } from "./suspension";
import { memoryRoutes } from "./memory";
import { channelsRoutes } from "./channels";
import { federationRoutes } from "./federation";
import { aclRoutes } from "./acl";
import { vaultRoutes } from "./vault";
import { verifiableLogRoutes } from "./verifiable-logs";
import { triggersRoutes } from "./triggers";
import { plansRoutes } from "./plans";
import { workflowsRoutes } from "./workflows";
import { tracingRoutes } from "./tracing";

/**
 * The REST API as data: every operation behind an API key, each area in its own module. The
 * gateway mounts exactly these (in this order, so a literal path such as /memory/batch is tried
 * before /memory/{entry_id}); the OpenAPI document is rendered from them.
 */
const catalogue = [
  ...intentsRoutes,
  ...graphRoutes,
  ...coordinatorRoutes,
  ...escalationRoutes,
  ...agentRoutes,
  ...attachmentsRoutes,
  ...retriesRoutes,
  ...portfoliosRoutes,
  ...costsRoutes,
  ...tasksRoutes,
  ...suspensionRoutes,
  ...plansRoutes,
  ...workflowsRoutes,
  ...governanceRoutes,
  ...memoryRoutes,
  ...channelsRoutes,
  ...aclRoutes,
  ...federationRoutes,
  ...vaultRoutes,
  ...verifiableLogRoutes,
  ...triggersRoutes,
  ...tracingRoutes,
] as const satisfies readonly ApiRoute[];

export const apiRoutes: readonly ApiRoute[] = catalogue;

/** The operationIds of the API. */
export type OperationId = (typeof catalogue)[number]["operationId"];
/** The catalogue entry of one operation, with its literal types. */
export type RouteOf<Id extends OperationId> = Extract<(typeof catalogue)[number], { operationId: Id }>;
/**
 * What a success of the operation answers (as routeResponse does at run time): the route's own
 * branch; else, for a page whose cursor travels in headers, the output's items array; else its
 * command's output.
 */
export type ResponseOf<Id extends OperationId> = RouteOf<Id> extends { response: infer R extends z.ZodType }
  ? z.output<R>
  : RouteOf<Id> extends { command: { output: infer O extends z.ZodType }; pageInHeaders: { items: infer K extends string } }
    ? z.output<O> extends Record<K, infer Items> ? Items : never
    : RouteOf<Id> extends { command: { output: infer O extends z.ZodType } }
      ? z.output<O>
      : unknown;

/** One operation by its id. */
export const routeById = <Id extends OperationId>(operationId: Id): RouteOf<Id> => apiRoutes.find((route) => route.operationId === operationId) as RouteOf<Id>;
