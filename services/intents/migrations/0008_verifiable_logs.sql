CREATE TABLE "intents"."checkpoints" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"merkle_root" text NOT NULL,
	"event_count" integer NOT NULL,
	"first_sequence" bigint NOT NULL,
	"last_sequence" bigint NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"signed_by" text NOT NULL,
	"signature" text NOT NULL,
	"anchor" jsonb
);
--> statement-breakpoint
ALTER TABLE "intents"."events" ADD COLUMN "event_hash" text;--> statement-breakpoint
ALTER TABLE "intents"."events" ADD COLUMN "previous_event_hash" text;--> statement-breakpoint
ALTER TABLE "intents"."events" ADD COLUMN "payload_canonical" text;--> statement-breakpoint
CREATE UNIQUE INDEX "checkpoints_intent_first_idx" ON "intents"."checkpoints" USING btree ("intent_id","first_sequence");--> statement-breakpoint
CREATE INDEX "checkpoints_intent_last_idx" ON "intents"."checkpoints" USING btree ("intent_id","last_sequence");--> statement-breakpoint
CREATE INDEX "checkpoints_created_idx" ON "intents"."checkpoints" USING btree ("created_at","id");