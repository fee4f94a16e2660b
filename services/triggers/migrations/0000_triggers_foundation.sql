CREATE SCHEMA "triggers";
--> statement-breakpoint
CREATE TABLE "triggers"."firings" (
	"id" uuid PRIMARY KEY NOT NULL,
	"trigger_id" text NOT NULL,
	"source" text NOT NULL,
	"status" text NOT NULL,
	"scheduled_for" timestamp with time zone,
	"fired_at" timestamp with time zone NOT NULL,
	"intent_id" uuid,
	"intent_open" boolean DEFAULT false NOT NULL,
	"cause_event_id" text,
	"cause_payload" jsonb,
	"depth" integer DEFAULT 1 NOT NULL,
	"chain" text[] DEFAULT '{}'::text[] NOT NULL,
	"reason" text
);
--> statement-breakpoint
CREATE TABLE "triggers"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "triggers"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "triggers"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "triggers"."triggers" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"enabled" boolean NOT NULL,
	"condition" jsonb NOT NULL,
	"intent_template" jsonb,
	"deduplication" text NOT NULL,
	"max_concurrent" integer,
	"namespace" text,
	"intent_id" uuid,
	"action" jsonb,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"last_fired_at" timestamp with time zone,
	"next_fire_at" timestamp with time zone,
	"fire_count" integer DEFAULT 0 NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"queued" boolean DEFAULT false NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "firings_schedule_once_idx" ON "triggers"."firings" USING btree ("trigger_id","scheduled_for") WHERE "triggers"."firings"."source" = 'schedule';--> statement-breakpoint
CREATE UNIQUE INDEX "firings_event_once_idx" ON "triggers"."firings" USING btree ("trigger_id","cause_event_id") WHERE "triggers"."firings"."source" = 'event';--> statement-breakpoint
CREATE INDEX "firings_trigger_idx" ON "triggers"."firings" USING btree ("trigger_id","fired_at");--> statement-breakpoint
CREATE INDEX "firings_pending_idx" ON "triggers"."firings" USING btree ("fired_at") WHERE "triggers"."firings"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "firings_intent_idx" ON "triggers"."firings" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "triggers"."outbox" USING btree ("id") WHERE "triggers"."outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "triggers_due_idx" ON "triggers"."triggers" USING btree ("next_fire_at") WHERE "triggers"."triggers"."enabled" and "triggers"."triggers"."deleted_at" is null and "triggers"."triggers"."next_fire_at" is not null;--> statement-breakpoint
CREATE INDEX "triggers_event_idx" ON "triggers"."triggers" USING btree ("type") WHERE "triggers"."triggers"."enabled" and "triggers"."triggers"."deleted_at" is null and "triggers"."triggers"."type" = 'event';--> statement-breakpoint
CREATE INDEX "triggers_intent_idx" ON "triggers"."triggers" USING btree ("intent_id") WHERE "triggers"."triggers"."intent_id" is not null;