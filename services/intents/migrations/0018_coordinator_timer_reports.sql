CREATE TABLE "intents"."coordinator_timer_reports" (
	"subject" text NOT NULL,
	"since" timestamp with time zone NOT NULL,
	"intent_id" uuid NOT NULL,
	"lease_id" uuid NOT NULL,
	"guardrail" text NOT NULL,
	"reported_at" timestamp with time zone NOT NULL,
	CONSTRAINT "coordinator_timer_reports_subject_since_pk" PRIMARY KEY("subject","since")
);
--> statement-breakpoint
CREATE INDEX "coordinator_timer_reports_intent_idx" ON "intents"."coordinator_timer_reports" USING btree ("intent_id");