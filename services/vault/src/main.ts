import { runService } from "@intentmesh/service";
import { vaultService } from "./manifest";

// Entry point of the vault service alone (one Kubernetes deployment).
await runService(vaultService);
