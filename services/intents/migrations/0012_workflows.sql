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
ALTER TABLE "intents"."plans" ADD COLUMN "workflow_id" uuid;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "io_contract" jsonb;--> statement-breakpoint
CREATE INDEX "workflows_seq_idx" ON "intents"."workflows" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "plans_workflow_idx" ON "intents"."plans" USING btree ("workflow_id","seq") WHERE "intents"."plans"."workflow_id" is not null;