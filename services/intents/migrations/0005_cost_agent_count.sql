ALTER TABLE "intents"."cost_totals" ADD COLUMN "agent_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Existing intents: count the agents that already have costs.
UPDATE "intents"."cost_totals" t SET "agent_count" = (SELECT count(*) FROM "intents"."cost_agent_totals" a WHERE a."intent_id" = t."intent_id");
