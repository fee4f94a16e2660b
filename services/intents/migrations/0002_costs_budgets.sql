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
ALTER TABLE "intents"."intents" ADD COLUMN "blocked_reason" text;
--> statement-breakpoint
CREATE INDEX "costs_intent_seq_idx" ON "intents"."costs" USING btree ("intent_id","seq");
