import { bigint, text, timestamp } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";


/**
 * The intents service's projection of the registry's agent.lifecycle events: each agent's last
 * known status, for the rules that need it on this side (a draining agent takes no new lease).
 * Eventually consistent with the registry by design; `event_sequence` keeps a late, older event
 * from overwriting a newer one.
 */
export const agentStatus = intentsSchema.table("agent_status", {
  agentId: text("agent_id").primaryKey(),
  status: text("status").notNull(),
  eventSequence: bigint("event_sequence", { mode: "number" }).notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull(),
});
