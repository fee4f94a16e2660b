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
CREATE UNIQUE INDEX "portfolio_events_sequence_idx" ON "intents"."portfolio_events" USING btree ("portfolio_id","sequence");--> statement-breakpoint
CREATE INDEX "portfolio_events_type_idx" ON "intents"."portfolio_events" USING btree ("portfolio_id","event_type","sequence");--> statement-breakpoint
CREATE INDEX "portfolio_members_intent_idx" ON "intents"."portfolio_members" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "portfolios_created_idx" ON "intents"."portfolios" USING btree ("created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "portfolios_created_by_idx" ON "intents"."portfolios" USING btree ("created_by","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "portfolios_status_idx" ON "intents"."portfolios" USING btree ("status","created_at" DESC NULLS LAST);