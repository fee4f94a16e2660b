export { runService, type ServiceDependencies, type RunningService } from "./run-service";
export { openServiceCore, type ServiceCore, type ServiceCoreOptions, type CommandGroup, type HandlersOf, type Stoppable, type Worker } from "./service-core";
export { Periodic, Sweeper } from "./periodic";
export { GovernanceChecks } from "./governance-checks";
