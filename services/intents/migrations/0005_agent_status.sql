CREATE TABLE "intents"."agent_status" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"event_sequence" bigint NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
