CREATE SCHEMA "governance";
--> statement-breakpoint
CREATE TABLE "governance"."approvals" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"action" text NOT NULL,
	"reason" text,
	"context" jsonb NOT NULL,
	"requested_by" text NOT NULL,
	"requester_principal" text NOT NULL,
	"status" text NOT NULL,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"decision_notes" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "governance"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "governance"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "governance"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "governance"."suspensions" (
	"suspension_id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"record" jsonb NOT NULL,
	"suspended_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"attempt" integer DEFAULT 1 NOT NULL,
	"next_due_at" timestamp with time zone,
	"status" text DEFAULT 'waiting' NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "approvals_intent_idx" ON "governance"."approvals" USING btree ("intent_id","created_at");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "governance"."outbox" USING btree ("id") WHERE "governance"."outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "suspensions_due_idx" ON "governance"."suspensions" USING btree ("next_due_at") WHERE "governance"."suspensions"."next_due_at" is not null;--> statement-breakpoint
CREATE INDEX "suspensions_intent_idx" ON "governance"."suspensions" USING btree ("intent_id");