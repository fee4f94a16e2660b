-- fastupdate off on entries_tags_gin without rebuilding it (ALTER INDEX; what was pending is merged by the next vacuum).
ALTER INDEX "memory"."entries_tags_gin" SET (fastupdate = false);--> statement-breakpoint
CREATE INDEX "entries_owner_tags_gin" ON "memory"."entries" USING gin (("tags" || (chr(1) || 'owner:' || "agent_id"))) WITH (fastupdate=false);
