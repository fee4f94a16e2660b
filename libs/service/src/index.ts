export { runService } from "./run-service";
export { defineService, type ServiceDefinition, type ServiceConnections, type RunningService, type OwnOptions, type AnyServiceDefinition, type ServiceOf, type OptionsOf } from "./definition";
export { openServiceCore, type ServiceCore, type ServiceCoreOptions, type CommandGroup, type HandlersOf, type Stoppable, type Worker } from "./service-core";
export { Periodic, Sweeper } from "./periodic";
export { GovernanceChecks } from "./governance-checks";
export { IntentAccessChecks } from "./intent-access-checks";
export { IntentWriteChecks, type WriteVerdict } from "./intent-write-checks";
