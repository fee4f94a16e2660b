CREATE TABLE "intents"."plans" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."plans_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"title" text,
	"state" text NOT NULL,
	"task_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"checkpoints" jsonb NOT NULL,
	"conditions" jsonb NOT NULL,
	"on_failure" text NOT NULL,
	"on_complete" text NOT NULL,
	"metadata" jsonb NOT NULL,
	"created_by" text NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"workflow_id" uuid,
	"activated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "intents"."workflows" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."workflows_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"name" text NOT NULL,
	"description" text NOT NULL,
	"yaml_spec" text NOT NULL,
	"types" jsonb NOT NULL,
	"phases" jsonb NOT NULL,
	"initial_state" jsonb NOT NULL,
	"created_by" text NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "plan_id" uuid;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "priority" text DEFAULT 'normal' NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "capabilities_required" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "io_contract" jsonb;--> statement-breakpoint
CREATE INDEX "plans_intent_idx" ON "intents"."plans" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "plans_workflow_idx" ON "intents"."plans" USING btree ("workflow_id","seq") WHERE "intents"."plans"."workflow_id" is not null;--> statement-breakpoint
CREATE INDEX "workflows_seq_idx" ON "intents"."workflows" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "tasks_plan_idx" ON "intents"."tasks" USING btree ("plan_id") WHERE "intents"."tasks"."plan_id" is not null;