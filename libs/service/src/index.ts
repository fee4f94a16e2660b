export { runService, type ServiceDependencies, type RunningService } from "./run-service";
