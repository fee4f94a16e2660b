import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { documented } from "@intentmesh/telemetry";
import { startChannelsService } from "./service";

/** The channels service: channels and typed agent-to-agent messages (docs/channels.md). */
export const channelsService = defineService({
  name: "channels",
  env: z.object({ CHANNEL_SWEEP_INTERVAL_MS: documented(z.coerce.number().int().min(50).default(1000), "how often message expiry and ttl are swept") }),
  options: (config) => ({ sweepIntervalMs: config.CHANNEL_SWEEP_INTERVAL_MS }),
  start: startChannelsService,
});
