import type { ServiceName } from "@intentmesh/contracts";
import type { AnyServiceDefinition } from "@intentmesh/service";
import { intentsService } from "./intents/src/manifest";
import { registryService } from "./registry/src/manifest";
import { memoryService } from "./memory/src/manifest";
import { federationService } from "./federation/src/manifest";
import { governanceService } from "./governance/src/manifest";
import { channelsService } from "./channels/src/manifest";
import { vaultService } from "./vault/src/manifest";
import { triggersService } from "./triggers/src/manifest";

/**
 * Every back-end service of intentmesh, by name, in start order (the order of CLUSTER_SERVICES):
 * the one list that README command 1 (scripts/start-cluster.ts), the test cluster
 * (test/support/cluster.ts) and the benchmarks start the cluster from. Each entry is the
 * definition in services/<name>/src/manifest.ts; the type requires exactly one per name of
 * CLUSTER_SERVICES, and test/e2e/service-manifest.e2e.test.ts finds every manifest on disk here.
 * The gateway is not in it: it is the HTTP front, configured by services/gateway/src/config.ts.
 */
export const clusterServices = {
  intents: intentsService,
  registry: registryService,
  memory: memoryService,
  federation: federationService,
  governance: governanceService,
  channels: channelsService,
  vault: vaultService,
  triggers: triggersService,
} satisfies { [Name in ServiceName]: AnyServiceDefinition & { name: Name } };

export type ClusterServices = typeof clusterServices;
