ALTER TABLE "intents"."events" ADD COLUMN "wire" text NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "lease_epoch" integer DEFAULT 0 NOT NULL;