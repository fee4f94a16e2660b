-- fastupdate off on entries_tags_gin without rebuilding it (what is already pending is merged by the next vacuum).
ALTER INDEX "memory"."entries_tags_gin" SET (fastupdate = false);
