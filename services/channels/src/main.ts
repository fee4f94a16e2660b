import { runService } from "@intentmesh/service";
import { channelsService } from "./manifest";

// Entry point of the channels service alone (one Kubernetes deployment).
await runService(channelsService);
