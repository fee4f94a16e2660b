CREATE TABLE "intents"."trace_spans" (
	"trace_id" text NOT NULL,
	"span_id" text NOT NULL,
	"parent_span_id" text,
	"operation" text NOT NULL,
	"status" text,
	"linked_by" text NOT NULL,
	"linked_at" timestamp with time zone NOT NULL,
	"position" integer NOT NULL,
	CONSTRAINT "trace_spans_trace_id_span_id_pk" PRIMARY KEY("trace_id","span_id")
);
--> statement-breakpoint
CREATE TABLE "intents"."traces" (
	"trace_id" text PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"trace_name" text NOT NULL,
	"parent_trace_id" text,
	"metadata" jsonb NOT NULL,
	"started_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"span_count" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "trace_spans_position_idx" ON "intents"."trace_spans" USING btree ("trace_id","position");--> statement-breakpoint
CREATE INDEX "traces_intent_idx" ON "intents"."traces" USING btree ("intent_id","created_at");--> statement-breakpoint
CREATE INDEX "events_intent_trace_idx" ON "intents"."events" USING btree ("intent_id","trace_id","sequence") WHERE "intents"."events"."trace_id" is not null;