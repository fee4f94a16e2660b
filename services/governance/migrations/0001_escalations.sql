ALTER TABLE "governance"."approvals" ADD COLUMN "priority" text;--> statement-breakpoint
ALTER TABLE "governance"."approvals" ADD COLUMN "urgency" text;--> statement-breakpoint
ALTER TABLE "governance"."approvals" ADD COLUMN "resolution" text;--> statement-breakpoint
CREATE INDEX "approvals_action_idx" ON "governance"."approvals" USING btree ("action","created_at");