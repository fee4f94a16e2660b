/**
 * RFC-0014 §3.2 step 9 and §10.3: whatever a tool answers, the credential's material is cut out
 * before anything is stored, logged or returned. A tool may echo the secret as sent, JSON-escaped,
 * URL-encoded or (basic auth) base64-encoded; every one of those spellings is replaced.
 */

export const REDACTED = "[REDACTED]";

/** Values shorter than this are not searched for (they would redact ordinary text); docs/vaults.md. */
const MIN_SECRET_LENGTH = 4;

export function secretSpellings(material: Record<string, string>): string[] {
  const values = Object.values(material).filter((value) => typeof value === "string" && value.length >= MIN_SECRET_LENGTH);
  const spellings = new Set<string>();
  for (const value of values) {
    spellings.add(value);
    spellings.add(JSON.stringify(value).slice(1, -1));
    spellings.add(encodeURIComponent(value));
    spellings.add(Buffer.from(value, "utf8").toString("base64"));
    spellings.add(Buffer.from(value, "utf8").toString("base64url"));
  }
  if (material.username !== undefined && material.password !== undefined) {
    spellings.add(Buffer.from(`${material.username}:${material.password}`, "utf8").toString("base64"));
  }
  // Longest first, so a spelling that contains another is cut whole.
  return [...spellings].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

export function redactText(text: string, spellings: readonly string[]): string {
  let out = text;
  for (const spelling of spellings) if (out.includes(spelling)) out = out.split(spelling).join(REDACTED);
  return out;
}

/** A JSON value with every string (keys too) redacted. */
export function redactJson(value: unknown, spellings: readonly string[]): unknown {
  if (!spellings.length) return value;
  return JSON.parse(redactText(JSON.stringify(value) ?? "null", spellings.map((s) => JSON.stringify(s).slice(1, -1))));
}
