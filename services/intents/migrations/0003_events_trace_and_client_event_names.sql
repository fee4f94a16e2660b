ALTER TABLE "intents"."events" ADD COLUMN "trace_id" text;--> statement-breakpoint
ALTER TABLE "intents"."events" ADD COLUMN "parent_event_id" uuid;--> statement-breakpoint

-- Issue 10: the server's event types take the names the spec gives, else the names of the official
-- clients' EventType enum (libs/contracts/src/event-types.ts). Stored events are renamed in their
-- column and in their frozen wire text. The wire's first "event_type" key is the event's own (the
-- id, intent_id and sequence before it cannot hold one), so a non-global replace touches only it.
-- Renewals become lease_acquired with renewal: true, and releases say reason: released, as new ones do.
UPDATE intents.events SET event_type = 'intent_created', wire = regexp_replace(wire, '"event_type":"intent\.created"', '"event_type":"intent_created"') WHERE event_type = 'intent.created';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'state_patched', wire = regexp_replace(wire, '"event_type":"intent\.state_patched"', '"event_type":"state_patched"') WHERE event_type = 'intent.state_patched';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'status_changed', wire = regexp_replace(wire, '"event_type":"intent\.status_changed"', '"event_type":"status_changed"') WHERE event_type = 'intent.status_changed';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'agent_assigned', wire = regexp_replace(wire, '"event_type":"intent\.agent_assigned"', '"event_type":"agent_assigned"') WHERE event_type = 'intent.agent_assigned';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'agent_unassigned', wire = regexp_replace(wire, '"event_type":"intent\.agent_unassigned"', '"event_type":"agent_unassigned"') WHERE event_type = 'intent.agent_unassigned';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'attachment_added', wire = regexp_replace(wire, '"event_type":"intent\.attachment_added"', '"event_type":"attachment_added"') WHERE event_type = 'intent.attachment_added';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'lease_acquired', wire = regexp_replace(wire, '"event_type":"lease\.acquired"', '"event_type":"lease_acquired"') WHERE event_type = 'lease.acquired';
--> statement-breakpoint
UPDATE intents.events SET payload = payload || '{"renewal":true}'::jsonb, wire = regexp_replace(wire, '"payload":\{', '"payload":{"renewal":true,') WHERE event_type = 'lease.renewed';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'lease_acquired', wire = regexp_replace(wire, '"event_type":"lease\.renewed"', '"event_type":"lease_acquired"') WHERE event_type = 'lease.renewed';
--> statement-breakpoint
UPDATE intents.events SET payload = payload || '{"reason":"released"}'::jsonb, wire = regexp_replace(wire, '"payload":\{', '"payload":{"reason":"released",') WHERE event_type = 'lease.released' AND NOT payload ? 'reason';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'lease_released', wire = regexp_replace(wire, '"event_type":"lease\.released"', '"event_type":"lease_released"') WHERE event_type = 'lease.released';
--> statement-breakpoint
UPDATE intents.events SET event_type = 'lease_released', wire = regexp_replace(wire, '"event_type":"lease\.expired"', '"event_type":"lease_released"') WHERE event_type = 'lease.expired';
--> statement-breakpoint
UPDATE intents.portfolio_events SET event_type = 'portfolio_created', wire = regexp_replace(wire, '"event_type":"portfolio\.created"', '"event_type":"portfolio_created"') WHERE event_type = 'portfolio.created';
--> statement-breakpoint
UPDATE intents.portfolio_events SET event_type = 'added_to_portfolio', wire = regexp_replace(wire, '"event_type":"portfolio\.member_added"', '"event_type":"added_to_portfolio"') WHERE event_type = 'portfolio.member_added';
--> statement-breakpoint
UPDATE intents.portfolio_events SET event_type = 'removed_from_portfolio', wire = regexp_replace(wire, '"event_type":"portfolio\.member_removed"', '"event_type":"removed_from_portfolio"') WHERE event_type = 'portfolio.member_removed';
--> statement-breakpoint
-- Messages not yet published (a service stopped with a backlog) leave under the new names too.
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.created$', '.intent_created'), payload = regexp_replace(payload, '"event_type":"intent\.created"', '"event_type":"intent_created"') WHERE published_at IS NULL AND subject LIKE '%.intent.created';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.state_patched$', '.state_patched'), payload = regexp_replace(payload, '"event_type":"intent\.state_patched"', '"event_type":"state_patched"') WHERE published_at IS NULL AND subject LIKE '%.intent.state_patched';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.status_changed$', '.status_changed'), payload = regexp_replace(payload, '"event_type":"intent\.status_changed"', '"event_type":"status_changed"') WHERE published_at IS NULL AND subject LIKE '%.intent.status_changed';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.agent_assigned$', '.agent_assigned'), payload = regexp_replace(payload, '"event_type":"intent\.agent_assigned"', '"event_type":"agent_assigned"') WHERE published_at IS NULL AND subject LIKE '%.intent.agent_assigned';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.agent_unassigned$', '.agent_unassigned'), payload = regexp_replace(payload, '"event_type":"intent\.agent_unassigned"', '"event_type":"agent_unassigned"') WHERE published_at IS NULL AND subject LIKE '%.intent.agent_unassigned';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.intent\.attachment_added$', '.attachment_added'), payload = regexp_replace(payload, '"event_type":"intent\.attachment_added"', '"event_type":"attachment_added"') WHERE published_at IS NULL AND subject LIKE '%.intent.attachment_added';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.lease\.acquired$', '.lease_acquired'), payload = regexp_replace(payload, '"event_type":"lease\.acquired"', '"event_type":"lease_acquired"') WHERE published_at IS NULL AND subject LIKE '%.lease.acquired';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.lease\.renewed$', '.lease_acquired'), payload = regexp_replace(payload, '"event_type":"lease\.renewed"', '"event_type":"lease_acquired"') WHERE published_at IS NULL AND subject LIKE '%.lease.renewed';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.lease\.released$', '.lease_released'), payload = regexp_replace(payload, '"event_type":"lease\.released"', '"event_type":"lease_released"') WHERE published_at IS NULL AND subject LIKE '%.lease.released';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.lease\.expired$', '.lease_released'), payload = regexp_replace(payload, '"event_type":"lease\.expired"', '"event_type":"lease_released"') WHERE published_at IS NULL AND subject LIKE '%.lease.expired';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.portfolio\.created$', '.portfolio_created'), payload = regexp_replace(payload, '"event_type":"portfolio\.created"', '"event_type":"portfolio_created"') WHERE published_at IS NULL AND subject LIKE '%.portfolio.created';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.portfolio\.member_added$', '.added_to_portfolio'), payload = regexp_replace(payload, '"event_type":"portfolio\.member_added"', '"event_type":"added_to_portfolio"') WHERE published_at IS NULL AND subject LIKE '%.portfolio.member_added';
--> statement-breakpoint
UPDATE intents.outbox SET subject = regexp_replace(subject, '\.portfolio\.member_removed$', '.removed_from_portfolio'), payload = regexp_replace(payload, '"event_type":"portfolio\.member_removed"', '"event_type":"removed_from_portfolio"') WHERE published_at IS NULL AND subject LIKE '%.portfolio.member_removed';
