import { runService } from "@intentmesh/service";
import { registryService } from "./manifest";

// Entry point of the registry service alone (one Kubernetes deployment).
await runService(registryService);
