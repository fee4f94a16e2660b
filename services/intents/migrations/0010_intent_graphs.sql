ALTER TABLE "intents"."intents" ADD COLUMN "parent_intent_id" uuid;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "depends_on" uuid[] DEFAULT '{}'::uuid[] NOT NULL;--> statement-breakpoint
CREATE INDEX "intents_parent_idx" ON "intents"."intents" USING btree ("parent_intent_id","created_at","id") WHERE parent_intent_id is not null;--> statement-breakpoint
CREATE INDEX "intents_depends_on_idx" ON "intents"."intents" USING gin ("depends_on");