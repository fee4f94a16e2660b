CREATE SCHEMA "vault";
--> statement-breakpoint
CREATE TABLE "vault"."agent_statuses" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"version" integer NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "vault"."credentials" (
	"id" uuid PRIMARY KEY NOT NULL,
	"vault_id" uuid NOT NULL,
	"owner_principal" text NOT NULL,
	"service" text NOT NULL,
	"label" text NOT NULL,
	"auth_type" text NOT NULL,
	"scopes_available" text[] DEFAULT '{}'::text[] NOT NULL,
	"metadata" jsonb NOT NULL,
	"secret_fields" text[] DEFAULT '{}'::text[] NOT NULL,
	"status" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"rotated_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"kek_id" text NOT NULL,
	"wrapped_key" text NOT NULL,
	"material" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "vault"."grants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"credential_id" uuid NOT NULL,
	"vault_id" uuid NOT NULL,
	"owner_principal" text NOT NULL,
	"service" text NOT NULL,
	"agent_id" text NOT NULL,
	"granted_by" text NOT NULL,
	"scopes" text[] DEFAULT '{}'::text[] NOT NULL,
	"constraints" jsonb NOT NULL,
	"source" text NOT NULL,
	"delegatable" boolean NOT NULL,
	"delegation_depth" integer NOT NULL,
	"delegated_from" uuid,
	"context" jsonb NOT NULL,
	"status" text NOT NULL,
	"suspended_reason" text,
	"invocation_count" integer DEFAULT 0 NOT NULL,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "vault"."identity_challenges" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"public_key" text NOT NULL,
	"challenge" text NOT NULL,
	"key_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "vault"."identity_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"public_key" text NOT NULL,
	"did" text NOT NULL,
	"registered_at" timestamp with time zone NOT NULL,
	"key_expires_at" timestamp with time zone,
	"registered_by" text NOT NULL,
	"retired_at" timestamp with time zone,
	"overlap_until" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"revoke_reason" text
);
--> statement-breakpoint
CREATE TABLE "vault"."inbox" (
	"consumer" text NOT NULL,
	"message_id" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "inbox_consumer_message_id_pk" PRIMARY KEY("consumer","message_id")
);
--> statement-breakpoint
CREATE TABLE "vault"."invocations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"grant_id" uuid NOT NULL,
	"credential_id" uuid NOT NULL,
	"owner_principal" text NOT NULL,
	"agent_id" text NOT NULL,
	"service" text NOT NULL,
	"tool" text NOT NULL,
	"parameters" jsonb NOT NULL,
	"status" text NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"cost" jsonb,
	"duration_ms" integer,
	"http_status" integer,
	"idempotency_key" text,
	"context" jsonb NOT NULL,
	"intent_id" uuid,
	"reported" boolean NOT NULL,
	"cost_state" text DEFAULT 'none' NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "vault"."outbox" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "vault"."outbox_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subject" text NOT NULL,
	"msg_id" text NOT NULL,
	"payload" text NOT NULL,
	"headers" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "vault"."vaults" (
	"id" uuid PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"name" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "credentials_vault_label_idx" ON "vault"."credentials" USING btree ("vault_id","label");--> statement-breakpoint
CREATE INDEX "credentials_kek_idx" ON "vault"."credentials" USING btree ("kek_id");--> statement-breakpoint
CREATE INDEX "credentials_service_idx" ON "vault"."credentials" USING btree ("service");--> statement-breakpoint
CREATE INDEX "grants_agent_idx" ON "vault"."grants" USING btree ("agent_id");--> statement-breakpoint
CREATE INDEX "grants_credential_idx" ON "vault"."grants" USING btree ("credential_id");--> statement-breakpoint
CREATE UNIQUE INDEX "identity_challenges_challenge_idx" ON "vault"."identity_challenges" USING btree ("challenge");--> statement-breakpoint
CREATE INDEX "identity_challenges_agent_idx" ON "vault"."identity_challenges" USING btree ("agent_id");--> statement-breakpoint
CREATE UNIQUE INDEX "identity_keys_current_idx" ON "vault"."identity_keys" USING btree ("agent_id") WHERE "vault"."identity_keys"."retired_at" is null and "vault"."identity_keys"."revoked_at" is null;--> statement-breakpoint
CREATE INDEX "identity_keys_agent_idx" ON "vault"."identity_keys" USING btree ("agent_id","registered_at");--> statement-breakpoint
CREATE INDEX "identity_keys_public_key_idx" ON "vault"."identity_keys" USING btree ("public_key");--> statement-breakpoint
CREATE INDEX "invocations_grant_idx" ON "vault"."invocations" USING btree ("grant_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "invocations_idempotency_idx" ON "vault"."invocations" USING btree ("agent_id","idempotency_key") WHERE "vault"."invocations"."idempotency_key" is not null;--> statement-breakpoint
CREATE INDEX "invocations_cost_pending_idx" ON "vault"."invocations" USING btree ("created_at") WHERE "vault"."invocations"."cost_state" = 'pending';--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "vault"."outbox" USING btree ("id") WHERE "vault"."outbox"."published_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "vaults_owner_name_idx" ON "vault"."vaults" USING btree ("owner_id","name");--> statement-breakpoint
CREATE INDEX "vaults_created_by_idx" ON "vault"."vaults" USING btree ("created_by");