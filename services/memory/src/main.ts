import { runService } from "@intentmesh/service";
import { memoryService } from "./manifest";

// Entry point of the memory service alone (one Kubernetes deployment).
await runService(memoryService);
