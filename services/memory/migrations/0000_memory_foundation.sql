CREATE SCHEMA "memory";
--> statement-breakpoint
CREATE TABLE "memory"."agent_settings" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"episodic_capacity" integer,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memory"."entries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"namespace" text NOT NULL,
	"key" text NOT NULL,
	"value" jsonb NOT NULL,
	"value_bytes" integer NOT NULL,
	"memory_type" text NOT NULL,
	"task_id" uuid,
	"intent_id" uuid,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"ttl" text,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"last_used_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"pinned" boolean,
	"priority" smallint,
	"curated_by" text,
	"sensitivity" text
);
--> statement-breakpoint
CREATE TABLE "memory"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "memory"."namespaces" (
	"namespace" text PRIMARY KEY NOT NULL,
	"permissions" jsonb NOT NULL,
	"version" integer NOT NULL,
	"updated_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memory"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "memory"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "memory"."tasks" (
	"task_id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"parent_task_id" uuid,
	"created_by" text NOT NULL,
	"assigned_agent" text,
	"previous_agents" text[] DEFAULT '{}'::text[] NOT NULL,
	"memory_policy" jsonb NOT NULL,
	"status" text NOT NULL,
	"ended" boolean DEFAULT false NOT NULL,
	"version" integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "entries_owned_key_uq" ON "memory"."entries" USING btree ("agent_id","namespace","key") WHERE "memory"."entries"."memory_type" <> 'semantic';--> statement-breakpoint
CREATE UNIQUE INDEX "entries_semantic_key_uq" ON "memory"."entries" USING btree ("namespace","key") WHERE "memory"."entries"."memory_type" = 'semantic';--> statement-breakpoint
CREATE INDEX "entries_tags_gin" ON "memory"."entries" USING gin ("tags");--> statement-breakpoint
CREATE INDEX "entries_owner_idx" ON "memory"."entries" USING btree ("agent_id","memory_type","namespace" text_pattern_ops);--> statement-breakpoint
CREATE INDEX "entries_semantic_ns_idx" ON "memory"."entries" USING btree ("namespace" text_pattern_ops) WHERE "memory"."entries"."memory_type" = 'semantic';--> statement-breakpoint
CREATE INDEX "entries_task_idx" ON "memory"."entries" USING btree ("task_id") WHERE "memory"."entries"."task_id" is not null;--> statement-breakpoint
CREATE INDEX "entries_expiry_idx" ON "memory"."entries" USING btree ("expires_at") WHERE "memory"."entries"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "entries_eviction_idx" ON "memory"."entries" USING btree ("agent_id","priority","last_used_at") WHERE "memory"."entries"."memory_type" = 'episodic' and "memory"."entries"."pinned" = false;--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "memory"."outbox" USING btree ("id") WHERE "memory"."outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "tasks_parent_idx" ON "memory"."tasks" USING btree ("parent_task_id") WHERE "memory"."tasks"."parent_task_id" is not null;--> statement-breakpoint
CREATE INDEX "tasks_assigned_idx" ON "memory"."tasks" USING btree ("assigned_agent");--> statement-breakpoint
CREATE INDEX "tasks_created_by_idx" ON "memory"."tasks" USING btree ("created_by");