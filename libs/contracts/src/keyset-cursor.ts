import { Uuid } from "./common";
import { errors } from "./errors";

/**
 * The keyset cursor of lists ordered by (created_at, id): opaque to clients (base64url of
 * `<ISO time>|<uuid>`), so the order can change without breaking a client. One codec for every
 * such list (intents, portfolios).
 */
export function encodeKeysetCursor(createdAt: Date, id: string): string {
  return Buffer.from(`${createdAt.toISOString()}|${id}`).toString("base64url");
}

/** The position a keyset cursor names; 400 VALIDATION_FAILED for anything this server did not issue. */
export function decodeKeysetCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, "base64url").toString().split("|");
  const createdAt = new Date(at ?? "");
  if (!id || Number.isNaN(createdAt.getTime()) || !Uuid.safeParse(id).success) throw errors.validation("after is not a cursor this server issued");
  return { createdAt, id };
}
