import { createHash } from "node:crypto";

/**
 * RFC 8785 (JSON Canonicalization Scheme) of a JSON value: object keys sorted by UTF-16 code
 * units (what Array.prototype.sort does with strings), no whitespace, numbers as ECMAScript prints
 * them, strings as JSON.stringify escapes them. The bytes RFC 0019 hashes and signs. The database
 * computes the same text for events (intents.canonical_json, migration 0009 of the intents
 * service); a test holds the two to each other.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonical JSON has no form for a number that is not finite");
      return JSON.stringify(value);
    case "string":
      return JSON.stringify(value);
    case "object": {
      // Loops and one growing string rather than map/filter/join: this runs for every event the
      // intents service writes (its hash), and the closures cost more than the text.
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ",";
          // A hole stays empty, as Array.prototype.map and join leave it (JSON never has one).
          if (i in value) out += canonicalJson(value[i]);
        }
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = "{";
      for (const key of keys) {
        const item = record[key];
        if (item === undefined) continue;
        if (out.length > 1) out += ",";
        out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no form for a ${typeof value}`);
  }
}

/** RFC 0019's hash notation: `sha256:` and the unpadded base64url of the SHA-256 digest. */
export const sha256Tag = (data: string | Uint8Array): string => `sha256:${createHash("sha256").update(data).digest("base64url")}`;

/** The 32 digest bytes of a `sha256:<base64url>` value, or null when it is not one. */
export function digestOfTag(tag: string): Buffer | null {
  if (!/^sha256:[A-Za-z0-9_-]{43}$/.test(tag)) return null;
  const bytes = Buffer.from(tag.slice(7), "base64url");
  return bytes.length === 32 ? bytes : null;
}

/** `sha256:<base64url>` of 32 digest bytes. */
export const tagOfDigest = (digest: Uint8Array): string => `sha256:${Buffer.from(digest).toString("base64url")}`;
