-- RFC 0019 hash chain of intent event logs (docs/verifiable-logs.md).
--
-- The database computes every event's hash, in a BEFORE INSERT trigger, so that every statement
-- that writes an event (the one-statement hot paths, the budget statement, the transaction path of
-- the other aggregates and the system-event consumer) chains it alike. The writer has already
-- locked the intent row to take the sequence number (event_seq), so the previous event is
-- committed, or written earlier in the same transaction, and the trigger's own query sees it: the
-- chain is extended under the lock that assigns the sequence, on every replica.
--
-- event_hash = "sha256:" + base64url(SHA-256(UTF-8 of the canonical JSON of the event's wire form
-- with previous_event_hash in it and event_hash left out)). Canonical JSON is RFC 8785 (JCS): keys
-- sorted by UTF-16 code units, no whitespace, numbers as ECMAScript prints the double, strings
-- escaped as JSON.stringify escapes them.

-- A JSON number as ECMAScript's Number::toString prints the nearest double (RFC 8785 3.2.2.3).
-- PostgreSQL prints float8 with the shortest digits that round-trip (extra_float_digits 1), the
-- same digits ECMAScript chooses; only the layout (where the exponent starts) differs, so the
-- digits and the decimal exponent are read from it and laid out by ECMAScript's rules.
CREATE FUNCTION intents.json_number(n numeric) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET extra_float_digits = 1 AS $$
DECLARE
  f float8;
  t text;
  mantissa text;
  exponent int := 0;
  int_part text;
  all_digits text;
  digits text;
  k int;
  p int;
  body text;
BEGIN
  IF n = trunc(n) AND abs(n) < 1000000000000000 THEN
    RETURN trunc(n)::text;
  END IF;
  f := n::float8;
  IF f = 0 THEN
    RETURN '0';
  END IF;
  t := abs(f)::text;
  IF position('e' IN t) > 0 THEN
    mantissa := split_part(t, 'e', 1);
    exponent := split_part(t, 'e', 2)::int;
  ELSE
    mantissa := t;
  END IF;
  int_part := split_part(mantissa, '.', 1);
  all_digits := int_part || split_part(mantissa, '.', 2);
  digits := ltrim(all_digits, '0');
  -- value = 0.<digits> x 10^p
  p := length(int_part) - (length(all_digits) - length(digits)) + exponent;
  digits := rtrim(digits, '0');
  k := length(digits);
  IF k <= p AND p <= 21 THEN
    body := digits || repeat('0', p - k);
  ELSIF 0 < p AND p <= 21 THEN
    body := left(digits, p) || '.' || substr(digits, p + 1);
  ELSIF -6 < p AND p <= 0 THEN
    body := '0.' || repeat('0', -p) || digits;
  ELSE
    body := left(digits, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
      || 'e' || CASE WHEN p - 1 >= 0 THEN '+' ELSE '-' END || abs(p - 1)::text;
  END IF;
  RETURN CASE WHEN f < 0 THEN '-' || body ELSE body END;
END $$;
--> statement-breakpoint

-- The sort key of an object key in UTF-16 code unit order. UTF-8 bytes sort in code point order,
-- which differs from UTF-16 order only between U+E000..U+FFFF and the supplementary planes; a key
-- holding a character of U+E000..U+FFFF gets its lead byte (EE, EF) moved past F4.
CREATE FUNCTION intents.utf16_order(k text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  result bytea := ''::bytea;
  c text;
  b bytea;
BEGIN
  FOREACH c IN ARRAY regexp_split_to_array(k, '') LOOP
    b := convert_to(c, 'UTF8');
    IF ascii(c) BETWEEN 57344 AND 65535 THEN
      b := set_byte(b, 0, get_byte(b, 0) + 7);
    END IF;
    result := result || b;
  END LOOP;
  RETURN result;
END $$;
--> statement-breakpoint

CREATE FUNCTION intents.json_key_order(k text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN k ~ '[\uE000-\uFFFF]' THEN intents.utf16_order(k) ELSE convert_to(k, 'UTF8') END
$$;
--> statement-breakpoint

-- A number as jsonb prints it (a plain decimal), as ECMAScript prints it: kept when it already is
-- (an integer of at most 15 digits, or a decimal of at most 15 significant digits without
-- trailing zeros and not below 1e-6: such a decimal is the shortest that gives its double),
-- else laid out by intents.json_number. An SQL expression, inlined where it is used.
CREATE FUNCTION intents.json_number_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE
    WHEN t ~ '^-?(0|[1-9][0-9]{0,14}|0\.0{0,5}[1-9][0-9]*|[1-9][0-9]*\.[0-9]*[1-9])$'
         AND length(ltrim(replace(t, '.', ''), '-0')) <= 15 THEN t
    ELSE intents.json_number(t::numeric) END
$$;
--> statement-breakpoint

-- RFC 8785 canonical JSON of a jsonb value. Strings and keys: jsonb's own escaping, which is
-- JSON.stringify's (", \, \b \f \n \r \t, other controls as \u00xx, nothing else escaped).
-- Numbers: intents.json_number_text. Scalars inside a container are written in place, so a call
-- and a query are spent per object or array only.
CREATE FUNCTION intents.canonical_json(v jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  CASE jsonb_typeof(v)
    WHEN 'object' THEN
      IF v::text ~ '[\uE000-\U0010FFFF]' THEN
        -- A key may hold a character where UTF-16 and code point order differ (rare): the exact order.
        RETURN '{' || coalesce((
          SELECT string_agg(to_json(e.key)::text || ':' || intents.canonical_json(e.value), ',' ORDER BY intents.json_key_order(e.key))
          FROM jsonb_each(v) e), '') || '}';
      END IF;
      RETURN '{' || coalesce((
        SELECT string_agg(to_json(e.key)::text || ':' || CASE jsonb_typeof(e.value)
            WHEN 'object' THEN intents.canonical_json(e.value)
            WHEN 'array' THEN intents.canonical_json(e.value)
            WHEN 'number' THEN intents.json_number_text(e.value::text)
            ELSE e.value::text END,
          ',' ORDER BY e.key COLLATE "C")
        FROM jsonb_each(v) e), '') || '}';
    WHEN 'array' THEN
      RETURN '[' || coalesce((
        SELECT string_agg(CASE jsonb_typeof(a.value)
            WHEN 'object' THEN intents.canonical_json(a.value)
            WHEN 'array' THEN intents.canonical_json(a.value)
            WHEN 'number' THEN intents.json_number_text(a.value::text)
            ELSE a.value::text END,
          ',' ORDER BY a.ord)
        FROM jsonb_array_elements(v) WITH ORDINALITY a(value, ord)), '') || ']';
    WHEN 'number' THEN
      RETURN intents.json_number_text(v::text);
    ELSE
      RETURN v::text;
  END CASE;
END $$;
--> statement-breakpoint

-- "sha256:" + unpadded base64url of the SHA-256 of a text's UTF-8 bytes (RFC 0019 1.2).
CREATE FUNCTION intents.sha256_tag(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT 'sha256:' || rtrim(translate(encode(sha256(convert_to(t, 'UTF8')), 'base64'), '+/', '-_'), '=')
$$;
--> statement-breakpoint

-- The canonical JSON of an event: its wire form (without hash fields) with previous_event_hash
-- added. An event has a known set of top-level fields, so their sorted order is written out here
-- (only the payload is canonicalised generically); a wire form with any other field takes the
-- generic path, so every field is hashed whatever the writers add later.
-- `payload_canonical`: the payload's canonical JSON when the writer already has it (see
-- events_chain), else null and the payload is canonicalised here.
CREATE FUNCTION intents.event_canonical_json(wire jsonb, previous text, payload_canonical text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF wire - ARRAY['actor', 'created_at', 'event_type', 'id', 'intent_id', 'parent_event_id', 'payload', 'sequence', 'trace_id'] <> '{}'::jsonb
     OR jsonb_typeof(wire->'actor') IS DISTINCT FROM 'string' OR jsonb_typeof(wire->'created_at') IS DISTINCT FROM 'string'
     OR jsonb_typeof(wire->'event_type') IS DISTINCT FROM 'string' OR jsonb_typeof(wire->'id') IS DISTINCT FROM 'string'
     OR jsonb_typeof(wire->'intent_id') IS DISTINCT FROM 'string' OR jsonb_typeof(wire->'sequence') IS DISTINCT FROM 'number'
     OR jsonb_typeof(wire->'payload') IS DISTINCT FROM 'object' THEN
    RETURN intents.canonical_json(wire || jsonb_build_object('previous_event_hash', previous));
  END IF;
  RETURN '{"actor":' || (wire->'actor')::text
    || ',"created_at":' || (wire->'created_at')::text
    || ',"event_type":' || (wire->'event_type')::text
    || ',"id":' || (wire->'id')::text
    || ',"intent_id":' || (wire->'intent_id')::text
    || coalesce(',"parent_event_id":' || intents.canonical_json(wire->'parent_event_id'), '')
    || ',"payload":' || coalesce(payload_canonical, CASE WHEN wire->'payload' = '{}'::jsonb THEN '{}' ELSE intents.canonical_json(wire->'payload') END)
    || ',"previous_event_hash":' || coalesce(to_json(previous)::text, 'null')
    || ',"sequence":' || intents.json_number_text((wire->'sequence')::text)
    || coalesce(',"trace_id":' || intents.canonical_json(wire->'trace_id'), '')
    || '}';
END $$;
--> statement-breakpoint

-- The hash of an event (RFC 0019 1.3).
CREATE FUNCTION intents.event_hash(wire jsonb, previous text, payload_canonical text DEFAULT NULL) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT intents.sha256_tag(intents.event_canonical_json(wire, previous, payload_canonical))
$$;
--> statement-breakpoint

-- The wire form with the chain fields appended (the served event; what the outbox publishes).
CREATE FUNCTION intents.sealed_wire(wire text, previous text, hash text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT left(wire, -1) || ',"previous_event_hash":' || coalesce('"' || previous || '"', 'null') || ',"event_hash":"' || hash || '"}'
$$;
--> statement-breakpoint

CREATE FUNCTION intents.events_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  body jsonb := NEW.wire::jsonb;
  previous text;
BEGIN
  IF jsonb_typeof(body) <> 'object' OR right(NEW.wire, 1) <> '}' THEN
    RAISE EXCEPTION 'event %: its wire form is not a JSON object', NEW.id;
  END IF;
  IF body ? 'event_hash' OR body ? 'previous_event_hash' THEN
    RAISE EXCEPTION 'event %: its wire form carries chain fields; only the database sets them', NEW.id;
  END IF;
  IF (body->>'sequence') IS DISTINCT FROM NEW.sequence::text OR (body->>'id') IS DISTINCT FROM NEW.id::text
     OR (body->>'intent_id') IS DISTINCT FROM NEW.intent_id::text THEN
    RAISE EXCEPTION 'event %: its wire form names another id, intent or sequence than its row', NEW.id;
  END IF;
  IF NEW.sequence > 1 THEN
    SELECT e.event_hash INTO previous FROM intents.events e
    WHERE e.intent_id = NEW.intent_id AND e.sequence = NEW.sequence - 1;
    IF previous IS NULL THEN
      RAISE EXCEPTION 'event % of intent % at sequence %: the event before it is missing or has no hash', NEW.id, NEW.intent_id, NEW.sequence;
    END IF;
  END IF;
  NEW.previous_event_hash := previous;
  -- A writer that holds the payload in JavaScript gives its canonical JSON (payload_canonical):
  -- hashing it spares canonicalising the jsonb again. It is server code like this trigger; an
  -- error in it would show as a hash_mismatch in verification, never pass unseen. Never stored.
  NEW.event_hash := intents.event_hash(body, previous, NEW.payload_canonical);
  NEW.payload_canonical := NULL;
  NEW.wire := intents.sealed_wire(NEW.wire, previous, NEW.event_hash);
  RETURN NEW;
END $$;
--> statement-breakpoint

-- Chains the events written before this migration, intent by intent in sequence order, each
-- linked to the row before it (a gap in an old log stays visible to verification as a gap).
CREATE FUNCTION intents.chain_unhashed_events() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  current_intent uuid;
  previous text;
  hash text;
  chained bigint := 0;
BEGIN
  FOR r IN
    SELECT e.id, e.intent_id, e.wire, e.event_hash FROM intents.events e
    WHERE e.intent_id IN (SELECT u.intent_id FROM intents.events u WHERE u.event_hash IS NULL)
    ORDER BY e.intent_id, e.sequence
  LOOP
    IF current_intent IS DISTINCT FROM r.intent_id THEN
      current_intent := r.intent_id;
      previous := NULL;
    END IF;
    IF r.event_hash IS NOT NULL THEN
      previous := r.event_hash;
      CONTINUE;
    END IF;
    hash := intents.event_hash(r.wire::jsonb, previous);
    UPDATE intents.events SET event_hash = hash, previous_event_hash = previous, wire = intents.sealed_wire(r.wire, previous, hash)
    WHERE id = r.id;
    previous := hash;
    chained := chained + 1;
  END LOOP;
  RETURN chained;
END $$;
--> statement-breakpoint

SELECT intents.chain_unhashed_events();
--> statement-breakpoint

CREATE TRIGGER events_chain BEFORE INSERT ON intents.events FOR EACH ROW EXECUTE FUNCTION intents.events_chain();
--> statement-breakpoint

-- Events are immutable: the service never updates or deletes one. This stops mistakes, not a
-- database administrator (who can disable triggers); the hash chain and the signed checkpoints
-- are what make a rewrite visible.
CREATE FUNCTION intents.events_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'intent events are immutable (RFC 0019): % refused', TG_OP;
END $$;
--> statement-breakpoint

CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON intents.events FOR EACH ROW EXECUTE FUNCTION intents.events_immutable();
