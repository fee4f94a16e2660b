CREATE TABLE "intents"."coordinator_leases" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"supervisor_id" text,
	"coordinator_type" text NOT NULL,
	"guardrails" jsonb,
	"metadata" jsonb NOT NULL,
	"heartbeat_interval_seconds" integer NOT NULL,
	"failover_candidates" text[] DEFAULT '{}'::text[] NOT NULL,
	"holds" boolean NOT NULL,
	"granted_at" timestamp with time zone NOT NULL,
	"last_heartbeat" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"end_reason" text,
	"predecessor_id" uuid,
	"version" integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "coordinator_leases_holder_idx" ON "intents"."coordinator_leases" USING btree ("intent_id") WHERE holds;--> statement-breakpoint
CREATE INDEX "coordinator_leases_intent_idx" ON "intents"."coordinator_leases" USING btree ("intent_id","granted_at");--> statement-breakpoint
CREATE INDEX "coordinator_leases_agent_idx" ON "intents"."coordinator_leases" USING btree ("agent_id") WHERE holds;