CREATE SCHEMA "registry";
--> statement-breakpoint
CREATE TABLE "registry"."agent_events" (
	"agent_id" text NOT NULL,
	"sequence" bigint NOT NULL,
	"id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"actor" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"wire" text NOT NULL,
	CONSTRAINT "agent_events_agent_id_sequence_pk" PRIMARY KEY("agent_id","sequence")
);
--> statement-breakpoint
CREATE TABLE "registry"."agents" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"owner_principal" text NOT NULL,
	"role_id" text,
	"name" text,
	"capabilities" text[] DEFAULT '{}'::text[] NOT NULL,
	"max_concurrent_tasks" integer,
	"current_load" integer DEFAULT 0 NOT NULL,
	"tasks_in_progress" text[] DEFAULT '{}'::text[] NOT NULL,
	"status" text NOT NULL,
	"endpoint" text,
	"interval_seconds" integer NOT NULL,
	"unhealthy_after_seconds" integer NOT NULL,
	"dead_after_seconds" integer NOT NULL,
	"metadata" jsonb NOT NULL,
	"origin_server_url" text,
	"registered_at" timestamp with time zone NOT NULL,
	"last_heartbeat_at" timestamp with time zone NOT NULL,
	"version" integer NOT NULL,
	"drain_deadline" timestamp with time zone,
	"pending_commands" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"next_check_at" timestamp with time zone,
	"event_seq" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "registry"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "registry"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "registry"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "agents_due_idx" ON "registry"."agents" USING btree ("next_check_at") WHERE "registry"."agents"."next_check_at" is not null;--> statement-breakpoint
CREATE INDEX "agents_draining_due_idx" ON "registry"."agents" USING btree ("next_check_at") WHERE "registry"."agents"."status" = 'draining';--> statement-breakpoint
CREATE INDEX "agents_role_idx" ON "registry"."agents" USING btree ("role_id");--> statement-breakpoint
CREATE INDEX "agents_capabilities_idx" ON "registry"."agents" USING gin ("capabilities");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "registry"."outbox" USING btree ("id") WHERE "registry"."outbox"."published_at" is null;--> statement-breakpoint
-- Room on each page for in-place (HOT) updates: heartbeats rewrite rows without touching an index.
ALTER TABLE "registry"."agents" SET (fillfactor = 80);
