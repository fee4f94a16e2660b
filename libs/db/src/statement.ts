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
