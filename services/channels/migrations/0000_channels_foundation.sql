CREATE SCHEMA "channels";
--> statement-breakpoint
CREATE TABLE "channels"."channels" (
	"id" uuid PRIMARY KEY NOT NULL,
	"intent_id" uuid NOT NULL,
	"task_id" uuid,
	"name" text NOT NULL,
	"created_by" text NOT NULL,
	"members" text[] DEFAULT '{}'::text[] NOT NULL,
	"member_policy" text NOT NULL,
	"audit" boolean NOT NULL,
	"ttl_seconds" integer,
	"max_messages" integer NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"closed_at" timestamp with time zone,
	"message_count" integer DEFAULT 0 NOT NULL,
	"last_message_at" timestamp with time zone,
	"closes_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "channels"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "channels"."messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"channel_id" uuid NOT NULL,
	"intent_id" uuid NOT NULL,
	"sequence" bigint NOT NULL,
	"sender" text NOT NULL,
	"to" text,
	"message_type" text NOT NULL,
	"correlation_id" uuid,
	"payload" jsonb NOT NULL,
	"metadata" jsonb NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"read_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "channels"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "channels"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "channels_intent_name_idx" ON "channels"."channels" USING btree ("intent_id","name");--> statement-breakpoint
CREATE INDEX "channels_task_idx" ON "channels"."channels" USING btree ("task_id") WHERE "channels"."channels"."task_id" is not null;--> statement-breakpoint
CREATE INDEX "channels_closes_at_idx" ON "channels"."channels" USING btree ("closes_at") WHERE "channels"."channels"."status" = 'open' and "channels"."channels"."closes_at" is not null;--> statement-breakpoint
CREATE INDEX "channels_members_idx" ON "channels"."channels" USING gin ("members");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_channel_seq_idx" ON "channels"."messages" USING btree ("channel_id","sequence");--> statement-breakpoint
CREATE INDEX "messages_correlation_idx" ON "channels"."messages" USING btree ("correlation_id") WHERE "channels"."messages"."correlation_id" is not null;--> statement-breakpoint
CREATE INDEX "messages_expiry_idx" ON "channels"."messages" USING btree ("expires_at") WHERE "channels"."messages"."status" in ('pending', 'delivered') and "channels"."messages"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "messages_to_idx" ON "channels"."messages" USING btree ("to") WHERE "channels"."messages"."status" in ('pending', 'delivered');--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "channels"."outbox" USING btree ("id") WHERE "channels"."outbox"."published_at" is null;