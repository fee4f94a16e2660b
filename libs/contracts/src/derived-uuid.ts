import { createHash } from "node:crypto";

/**
 * A UUID derived from a name (SHA-256, laid out as a version-5 UUID): the same name always gives
 * the same id. Services use it where a repeated attempt must carry the same id, so the write it
 * names happens once (an event announced at most once, an intent created once per dispatch).
 */
export function derivedUuid(name: string): string {
  const h = createHash("sha256").update(name).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
