import { z } from "zod";
import { runService } from "@intentmesh/service";
import { startChannelsService } from "./service";

// Entry point of the channels service alone (one Kubernetes deployment).
await runService(
  "channels",
  z.object({ CHANNEL_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(1000) }),
  ({ config, ...connections }) => startChannelsService({ ...connections, sweepIntervalMs: config.CHANNEL_SWEEP_INTERVAL_MS }),
);
