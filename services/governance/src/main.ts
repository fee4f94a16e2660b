import { runService } from "@intentmesh/service";
import { governanceService } from "./manifest";

// Entry point of the governance service alone (one Kubernetes deployment).
await runService(governanceService);
