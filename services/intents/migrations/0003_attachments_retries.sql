CREATE TABLE "intents"."attachments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."attachments_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"filename" text NOT NULL,
	"mime_type" text NOT NULL,
	"size" bigint NOT NULL,
	"storage_url" text NOT NULL,
	"metadata" jsonb NOT NULL,
	"uploaded_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."failures" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."failures_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"attempt_number" integer NOT NULL,
	"error_code" text NOT NULL,
	"error_message" text NOT NULL,
	"retry_scheduled_at" timestamp with time zone,
	"resolved_at" timestamp with time zone,
	"metadata" jsonb NOT NULL,
	"retries_exhausted" boolean DEFAULT false NOT NULL,
	"fallback_agent_id" text,
	"cost_id" uuid,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."retry_policies" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"strategy" text NOT NULL,
	"max_retries" integer NOT NULL,
	"base_delay_ms" integer NOT NULL,
	"max_delay_ms" integer NOT NULL,
	"fallback_agent_id" text,
	"failure_threshold" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "attachments_intent_idx" ON "intents"."attachments" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "failures_intent_idx" ON "intents"."failures" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "failures_unresolved_idx" ON "intents"."failures" USING btree ("intent_id","agent_id") WHERE "intents"."failures"."resolved_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "retry_policies_intent_idx" ON "intents"."retry_policies" USING btree ("intent_id");