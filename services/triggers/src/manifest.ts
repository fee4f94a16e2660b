import { z } from "zod";
import { defineService } from "@intentmesh/service";
import { documented } from "@intentmesh/telemetry";
import { startTriggersService } from "./service";

/** The triggers service: schedules, event triggers and manual fire that create intents (RFC-0017, docs/triggers.md). */
export const triggersService = defineService({
  name: "triggers",
  env: z.object({
    TRIGGER_SCHEDULER_INTERVAL_MS: documented(
      z.coerce.number().int().min(50).max(60_000).default(1000),
      "how often due schedules are claimed and pending firings create their intents ([docs/triggers.md](docs/triggers.md)); a schedule fires at most this late",
    ),
    TRIGGER_EVENT_CACHE_MS: documented(
      z.coerce.number().int().min(0).max(60_000).default(1000),
      "how long a triggers replica trusts its list of event triggers to skip events none can match without touching the database; an event trigger created through another replica is at most this late to see events",
    ),
  }),
  options: (config) => ({ schedulerIntervalMs: config.TRIGGER_SCHEDULER_INTERVAL_MS, eventTriggerCacheMs: config.TRIGGER_EVENT_CACHE_MS }),
  start: startTriggersService,
});
