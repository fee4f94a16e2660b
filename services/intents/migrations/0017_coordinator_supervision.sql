ALTER TABLE "intents"."coordinator_leases" ADD COLUMN "paused_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "intents"."coordinator_leases" ADD COLUMN "paused_by" text;--> statement-breakpoint
ALTER TABLE "intents"."coordinator_leases" ADD COLUMN "pause_reason" text;--> statement-breakpoint
ALTER TABLE "intents"."coordinator_leases" ADD COLUMN "stall_reported_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "intents"."coordinator_leases" ADD COLUMN "consecutive_failures" integer DEFAULT 0 NOT NULL;