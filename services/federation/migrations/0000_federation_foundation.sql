CREATE SCHEMA "federation";
--> statement-breakpoint
CREATE TABLE "federation"."dispatches" (
	"dispatch_id" uuid PRIMARY KEY NOT NULL,
	"principal" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"intent_id" uuid NOT NULL,
	"target_server" text NOT NULL,
	"target_did" text NOT NULL,
	"agent_id" text,
	"status" text NOT NULL,
	"request_hash" text NOT NULL,
	"answer" jsonb,
	"last_error" jsonb,
	"remote_intent_id" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "federation"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "federation"."incoming_callbacks" (
	"idempotency_key" text PRIMARY KEY NOT NULL,
	"dispatch_id" uuid NOT NULL,
	"event_type" text NOT NULL,
	"received_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "federation"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "federation"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "federation"."outgoing_callbacks" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "federation"."outgoing_callbacks_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"idempotency_key" text NOT NULL,
	"received_id" uuid NOT NULL,
	"url" text NOT NULL,
	"body" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone NOT NULL,
	"delivered_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "outgoing_callbacks_idempotency_key_unique" UNIQUE("idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "federation"."received_dispatches" (
	"id" uuid PRIMARY KEY NOT NULL,
	"source_did" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"dispatch_id" uuid NOT NULL,
	"source_server" text NOT NULL,
	"callback_url" text NOT NULL,
	"origin_intent_id" uuid NOT NULL,
	"local_intent_id" uuid,
	"agent_id" text,
	"status" text NOT NULL,
	"governance" jsonb NOT NULL,
	"delegation_scope" jsonb NOT NULL,
	"answer" jsonb,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "federation"."seen_nonces" (
	"key_id" text NOT NULL,
	"nonce" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "seen_nonces_key_id_nonce_pk" PRIMARY KEY("key_id","nonce")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "dispatches_key_idx" ON "federation"."dispatches" USING btree ("principal","idempotency_key");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "federation"."outbox" USING btree ("id") WHERE "federation"."outbox"."published_at" is null;--> statement-breakpoint
CREATE INDEX "outgoing_callbacks_due_idx" ON "federation"."outgoing_callbacks" USING btree ("next_attempt_at");--> statement-breakpoint
CREATE UNIQUE INDEX "received_key_idx" ON "federation"."received_dispatches" USING btree ("source_did","idempotency_key");--> statement-breakpoint
CREATE INDEX "received_local_intent_idx" ON "federation"."received_dispatches" USING btree ("local_intent_id");--> statement-breakpoint
CREATE INDEX "seen_nonces_expiry_idx" ON "federation"."seen_nonces" USING btree ("expires_at");