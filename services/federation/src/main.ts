import { runService } from "@intentmesh/service";
import { federationService } from "./manifest";

// Entry point of the federation service alone (one Kubernetes deployment).
await runService(federationService);
