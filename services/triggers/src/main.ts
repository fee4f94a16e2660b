import { runService } from "@intentmesh/service";
import { triggersService } from "./manifest";

// Entry point of the triggers service alone (one Kubernetes deployment).
await runService(triggersService);
