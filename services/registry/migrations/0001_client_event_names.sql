-- Issue 10: assignments projected onto an agent's log take the clients' names (agent_assigned,
-- agent_unassigned; libs/contracts/src/event-types.ts). Stored events are renamed in their column
-- and in their frozen wire text, whose first "event_type" key is the event's own.
UPDATE registry.agent_events SET event_type = 'agent_assigned', wire = regexp_replace(wire, '"event_type":"agent\.assigned"', '"event_type":"agent_assigned"') WHERE event_type = 'agent.assigned';
--> statement-breakpoint
UPDATE registry.agent_events SET event_type = 'agent_unassigned', wire = regexp_replace(wire, '"event_type":"agent\.unassigned"', '"event_type":"agent_unassigned"') WHERE event_type = 'agent.unassigned';
--> statement-breakpoint
-- Messages not yet published leave under the new names too.
UPDATE registry.outbox SET subject = regexp_replace(subject, '\.agent\.assigned$', '.agent_assigned'), payload = regexp_replace(payload, '"event_type":"agent\.assigned"', '"event_type":"agent_assigned"') WHERE published_at IS NULL AND subject LIKE '%.agent.assigned';
--> statement-breakpoint
UPDATE registry.outbox SET subject = regexp_replace(subject, '\.agent\.unassigned$', '.agent_unassigned'), payload = regexp_replace(payload, '"event_type":"agent\.unassigned"', '"event_type":"agent_unassigned"') WHERE published_at IS NULL AND subject LIKE '%.agent.unassigned';
