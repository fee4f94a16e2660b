import type { ApiRoute } from "../api-route";
import { intentsRoutes } from "./intents";
import { agentRoutes } from "./registry";
import { attachmentsRoutes } from "./attachments";
import { retriesRoutes } from "./retries";
import { portfoliosRoutes } from "./portfolios";
import { costsRoutes } from "./costs";
import { tasksRoutes } from "./tasks";
import { governanceRoutes } from "./governance";
import { memoryRoutes } from "./memory";
import { channelsRoutes } from "./channels";
import { federationRoutes } from "./federation";

/**
 * The REST API as data: every operation behind an API key, each area in its own module. The
 * gateway mounts exactly these (in this order, so a literal path such as /memory/batch is tried
 * before /memory/{entry_id}); the OpenAPI document is rendered from them.
 */
export const apiRoutes: readonly ApiRoute[] = [
  ...intentsRoutes,
  ...agentRoutes,
  ...attachmentsRoutes,
  ...retriesRoutes,
  ...portfoliosRoutes,
  ...costsRoutes,
  ...tasksRoutes,
  ...governanceRoutes,
  ...memoryRoutes,
  ...channelsRoutes,
  ...federationRoutes,
];
