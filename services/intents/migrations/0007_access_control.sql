CREATE TABLE "intents"."access_requests" (
	"id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "intents"."access_requests_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"intent_id" uuid NOT NULL,
	"principal_type" text NOT NULL,
	"principal_id" text NOT NULL,
	"requested_permission" text NOT NULL,
	"reason" text NOT NULL,
	"capabilities" jsonb NOT NULL,
	"requested_by" text NOT NULL,
	"status" text NOT NULL,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"decision_reason" text,
	"entry_id" uuid,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "intents"."acl_entries" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"principal_type" text NOT NULL,
	"principal_id" text NOT NULL,
	"permission" text NOT NULL,
	"granted_by" text NOT NULL,
	"granted_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"reason" text
);
--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "acl_policy" text;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "acl_default" text;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "acl_owner" text;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "acl_version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "access_requests_intent_idx" ON "intents"."access_requests" USING btree ("intent_id","seq");--> statement-breakpoint
CREATE INDEX "access_requests_pending_idx" ON "intents"."access_requests" USING btree ("intent_id") WHERE "intents"."access_requests"."status" = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "acl_entries_principal_idx" ON "intents"."acl_entries" USING btree ("intent_id","principal_type","principal_id");--> statement-breakpoint
CREATE INDEX "acl_entries_expiry_idx" ON "intents"."acl_entries" USING btree ("expires_at") WHERE "intents"."acl_entries"."expires_at" is not null;