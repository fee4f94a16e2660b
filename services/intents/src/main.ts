import { runService } from "@intentmesh/service";
import { intentsService } from "./manifest";

// Entry point of the intents service alone (one Kubernetes deployment).
await runService(intentsService);
