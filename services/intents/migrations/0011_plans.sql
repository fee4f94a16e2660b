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
	"activated_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "plans_intent_idx" ON "intents"."plans" USING btree ("intent_id","seq");