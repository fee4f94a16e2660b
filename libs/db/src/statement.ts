import { sql, type SQL } from "drizzle-orm";

/**
 * A statement written with $n placeholders (as it runs as a named prepared statement outside a
 * transaction) as a drizzle SQL object, so the same text also runs inside a caller's transaction.
 */
export function withParams(text: string, params: unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  const chunks: SQL[] = parts.map((part, index) => (index % 2 === 0 ? sql.raw(part) : sql`${params[Number(part) - 1]}`));
  return sql.join(chunks, sql.raw(""));
}

/** A unique violation (23505), as pg raises it or as drizzle wraps it (the pg error is its cause). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; cause?: unknown } | null;
  return e?.code === "23505" || (e?.cause !== undefined && e.cause !== error && isUniqueViolation(e.cause));
}
