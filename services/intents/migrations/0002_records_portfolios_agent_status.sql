CREATE TABLE "intents"."agent_status" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"event_sequence" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."cost_agent_totals" (
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"record_count" bigint NOT NULL,
	"amount" numeric NOT NULL,
	"cents" numeric NOT NULL,
	CONSTRAINT "cost_agent_totals_intent_id_agent_id_pk" PRIMARY KEY("intent_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "intents"."cost_totals" (
	"intent_id" uuid PRIMARY KEY NOT NULL,
	"record_count" bigint NOT NULL,
	"amount" numeric NOT NULL,
	"cents" numeric NOT NULL,
	"max_call_cents" numeric
);
--> statement-breakpoint
CREATE TABLE "intents"."cost_type_totals" (
	"intent_id" uuid NOT NULL,
	"cost_type" text NOT NULL,
	"record_count" bigint NOT NULL,
	"amount" numeric NOT NULL,
	CONSTRAINT "cost_type_totals_intent_id_cost_type_pk" PRIMARY KEY("intent_id","cost_type")
);
--> statement-breakpoint
CREATE TABLE "intents"."costs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."costs_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"cost_type" text NOT NULL,
	"amount" numeric NOT NULL,
	"unit" text NOT NULL,
	"cents" numeric,
	"provider" text,
	"metadata" jsonb NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	"wire" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."portfolio_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"portfolio_id" uuid NOT NULL,
	"sequence" bigint NOT NULL,
	"event_type" text NOT NULL,
	"actor" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"wire" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."portfolio_members" (
	"portfolio_id" uuid NOT NULL,
	"intent_id" uuid NOT NULL,
	"role" text,
	"added_by" text NOT NULL,
	"added_at" timestamp with time zone NOT NULL,
	"intent_status" text NOT NULL,
	"intent_sequence" bigint NOT NULL,
	CONSTRAINT "portfolio_members_portfolio_id_intent_id_pk" PRIMARY KEY("portfolio_id","intent_id")
);
--> statement-breakpoint
CREATE TABLE "intents"."portfolios" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"created_by" text NOT NULL,
	"status" text NOT NULL,
	"due_before" timestamp with time zone,
	"metadata" jsonb NOT NULL,
	"version" integer NOT NULL,
	"event_seq" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
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
ALTER TABLE "intents"."intents" ADD COLUMN "blocked_reason" text;--> statement-breakpoint
CREATE INDEX "costs_intent_seq_idx" ON "intents"."costs" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "portfolio_events_sequence_idx" ON "intents"."portfolio_events" USING btree ("portfolio_id","sequence");--> statement-breakpoint
CREATE INDEX "portfolio_events_type_idx" ON "intents"."portfolio_events" USING btree ("portfolio_id","event_type","sequence");--> statement-breakpoint
CREATE INDEX "portfolio_members_intent_idx" ON "intents"."portfolio_members" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "portfolios_created_idx" ON "intents"."portfolios" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "portfolios_created_by_idx" ON "intents"."portfolios" USING btree ("created_by","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "portfolios_status_idx" ON "intents"."portfolios" USING btree ("status","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "attachments_intent_idx" ON "intents"."attachments" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "failures_intent_idx" ON "intents"."failures" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "failures_unresolved_idx" ON "intents"."failures" USING btree ("intent_id","agent_id") WHERE "intents"."failures"."resolved_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "retry_policies_intent_idx" ON "intents"."retry_policies" USING btree ("intent_id");