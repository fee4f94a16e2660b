ALTER TABLE "intents"."tasks" ADD COLUMN "plan_id" uuid;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "priority" text DEFAULT 'normal' NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "capabilities_required" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."tasks" ADD COLUMN "metadata" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "tasks_plan_idx" ON "intents"."tasks" USING btree ("plan_id") WHERE "intents"."tasks"."plan_id" is not null;