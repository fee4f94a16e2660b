CREATE TABLE "intents"."tasks" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."tasks_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"title" text NOT NULL,
	"description" text,
	"parent_task_id" uuid,
	"depends_on" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"status" text NOT NULL,
	"assigned_agent" text,
	"previous_agents" text[] DEFAULT '{}'::text[] NOT NULL,
	"memory_policy" jsonb NOT NULL,
	"retry_policy" jsonb,
	"input" jsonb NOT NULL,
	"output" jsonb,
	"error" text,
	"blocked_reason" text,
	"blocked_from" text,
	"suspended_intent_id" uuid,
	"attempt" integer DEFAULT 0 NOT NULL,
	"created_by" text NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"claimed_at" timestamp with time zone,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "intents"."failures" ADD COLUMN "task_id" uuid;--> statement-breakpoint
CREATE INDEX "tasks_intent_idx" ON "intents"."tasks" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "tasks_intent_status_idx" ON "intents"."tasks" USING btree ("intent_id","status","seq");--> statement-breakpoint
CREATE INDEX "tasks_agent_idx" ON "intents"."tasks" USING btree ("assigned_agent") WHERE "intents"."tasks"."assigned_agent" is not null;