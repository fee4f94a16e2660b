CREATE SCHEMA "intents";
--> statement-breakpoint
CREATE TABLE "intents"."assignments" (
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"role" text,
	"assigned_by" text NOT NULL,
	"assigned_at" timestamp with time zone NOT NULL,
	CONSTRAINT "assignments_intent_id_agent_id_pk" PRIMARY KEY("intent_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "intents"."events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"sequence" bigint NOT NULL,
	"event_type" text NOT NULL,
	"actor" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "intents"."intents" (
	"id" uuid PRIMARY KEY NOT NULL,
	"title" text NOT NULL,
	"description" text,
	"created_by" text NOT NULL,
	"status" text NOT NULL,
	"constraints" jsonb NOT NULL,
	"state" jsonb NOT NULL,
	"confidence" double precision NOT NULL,
	"version" integer NOT NULL,
	"event_seq" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."leases" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"scope" text NOT NULL,
	"scope_key" text NOT NULL,
	"acquired_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"released_at" timestamp with time zone,
	"holds_scope" boolean DEFAULT true NOT NULL,
	"end_reason" text,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "intents"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "intents"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "events_intent_sequence_idx" ON "intents"."events" USING btree ("intent_id","sequence");--> statement-breakpoint
CREATE INDEX "events_intent_type_idx" ON "intents"."events" USING btree ("intent_id","event_type","sequence");--> statement-breakpoint
CREATE INDEX "intents_created_idx" ON "intents"."intents" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "intents_status_idx" ON "intents"."intents" USING btree ("status","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "intents_created_by_idx" ON "intents"."intents" USING btree ("created_by","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "leases_held_scope_idx" ON "intents"."leases" USING btree ("intent_id","scope_key") WHERE "intents"."leases"."holds_scope";--> statement-breakpoint
CREATE INDEX "leases_due_idx" ON "intents"."leases" USING btree ("expires_at") WHERE "intents"."leases"."holds_scope";--> statement-breakpoint
CREATE INDEX "leases_agent_held_idx" ON "intents"."leases" USING btree ("agent_id") WHERE "intents"."leases"."holds_scope";--> statement-breakpoint
CREATE INDEX "leases_intent_idx" ON "intents"."leases" USING btree ("intent_id","acquired_at");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "intents"."outbox" USING btree ("id") WHERE "intents"."outbox"."published_at" is null;