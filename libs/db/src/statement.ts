import { sql, type SQL } from "drizzle-orm";

/**
 * A statement written with $n placeholders (as it runs as a named prepared statement outside a
 * transaction) as a drizzle SQL object, so the same text also runs inside a caller's transaction.
 * The text's pieces are parsed once per text, and the statement is one flat SQL object (text
 * pieces and parameters, as drizzle's sql`` template makes): the hot paths' text statements run
 * through here on every request, and a nested SQL object per piece cost drizzle a recursion (and
 * a copy of its build options) per piece. A bare array parameter becomes a list ($1, $2), as in
 * sql``; pass an array as one parameter with drizzle's `param`.
 */
export function withParams(text: string, params: unknown[]): SQL {
  const { strings, indexes } = parsedText(text);
  return sql(strings, ...indexes.map((index) => params[index]));
}

interface ParsedText {
  /** The text between placeholders, as a template's strings. */
  strings: TemplateStringsArray;
  /** For each placeholder, in order, the index of its parameter ($1 is 0). */
  indexes: number[];
}

/** Parsed texts; bounded, in case a caller makes texts with values in them. */
const parsedTexts = new Map<string, ParsedText>();
const MAX_PARSED_TEXTS = 2000;

function parsedText(text: string): ParsedText {
  let parsed = parsedTexts.get(text);
  if (!parsed) {
    const parts = text.split(/\$(\d+)/);
    const strings = parts.filter((_part, i) => i % 2 === 0);
    parsed = {
      strings: Object.assign(strings, { raw: strings }) as unknown as TemplateStringsArray,
      indexes: parts.filter((_part, i) => i % 2 === 1).map((n) => Number(n) - 1),
    };
    if (parsedTexts.size < MAX_PARSED_TEXTS) parsedTexts.set(text, parsed);
  }
  return parsed;
}

/** A unique violation (23505), as pg raises it or as drizzle wraps it (the pg error is its cause). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; cause?: unknown } | null;
  return e?.code === "23505" || (e?.cause !== undefined && e.cause !== error && isUniqueViolation(e.cause));
}
