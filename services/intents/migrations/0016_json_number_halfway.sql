-- ECMAScript number printing for the one case PostgreSQL prints longer (docs/verifiable-logs.md):
-- the canonical JSON the database hashes must equal what the service and every client hash.
CREATE OR REPLACE FUNCTION intents.json_number(n numeric) RETURNS text
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
  shorter numeric;
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
  -- PostgreSQL's shortest output keeps one digit more than ECMAScript's where the shorter decimal
  -- lies exactly halfway between two doubles and reads back (round half to even) as this one:
  -- 62682844041053260 prints as 62682844041053264. ECMAScript takes the shorter decimal, so a
  -- digit is dropped for as long as the rounded shorter one still reads back as the same double.
  LOOP
    -- Near the ends of the double range the shorter decimal may not convert at all (out of range):
    -- no tie there was ever seen, and the digits stay as PostgreSQL printed them.
    EXIT WHEN k <= 1 OR p > 300 OR p < -300;
    shorter := round(('0.' || digits)::numeric, k - 1);
    EXIT WHEN (shorter * power(10::numeric, p))::float8 <> abs(f);
    IF shorter >= 1 THEN
      digits := '1';
      p := p + 1;
    ELSE
      digits := rtrim(substr(shorter::text, 3), '0');
    END IF;
    k := length(digits);
  END LOOP;
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
