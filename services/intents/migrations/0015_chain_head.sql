ALTER TABLE "intents"."intents" ADD COLUMN "chain_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "chain_head" text;--> statement-breakpoint
ALTER TABLE "intents"."intents" ADD COLUMN "chain_previous" text;--> statement-breakpoint

-- The chain head on the intent row (docs/verifiable-logs.md, "Who computes it"): the hot
-- statements hash each new event from chain_head in the UPDATE that takes its sequence, and the
-- transaction path hashes in the service; both store the hash fields themselves. Backfill: every
-- intent's head is its newest event (the one at event_seq). An intent whose log lacks that event
-- keeps chain_seq 0, so its next write reads the previous event and refuses the hole, as before.
UPDATE intents.intents i
SET chain_seq = e.sequence, chain_head = e.event_hash, chain_previous = e.previous_event_hash
FROM intents.events e
WHERE e.intent_id = i.id AND e.sequence = i.event_seq AND e.event_hash IS NOT NULL;
--> statement-breakpoint

-- The event_hash of an intent's event at `seq`, for a writer whose chain head is behind (chain_seq
-- <> event_seq). VOLATILE, so it reads with a snapshot taken when it runs: after the row lock was
-- granted (an UPDATE re-evaluates its SET under the lock when the row changed meanwhile), so it
-- sees the event the previous lock holder committed. Refuses a hole, as the trigger does.
CREATE FUNCTION intents.chain_link(intent uuid, seq bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  found text;
BEGIN
  IF seq < 1 THEN
    RETURN NULL;
  END IF;
  SELECT e.event_hash INTO found FROM intents.events e WHERE e.intent_id = intent AND e.sequence = seq;
  IF found IS NULL THEN
    RAISE EXCEPTION 'intent % at sequence %: the event is missing or has no hash; its log is not extended', intent, seq;
  END IF;
  RETURN found;
END $$;
--> statement-breakpoint

-- The trigger stays for writers that build their events in SQL and leave the hash to the database
-- (the budget statement, costs/statements.ts) and for rows written by a replica of the previous
-- release during a rolling update: it runs only for a row that arrives without its hash.
DROP TRIGGER events_chain ON intents.events;
--> statement-breakpoint
CREATE TRIGGER events_chain BEFORE INSERT ON intents.events FOR EACH ROW WHEN (NEW.event_hash IS NULL) EXECUTE FUNCTION intents.events_chain();
