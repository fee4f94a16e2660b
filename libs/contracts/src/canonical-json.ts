import { hash } from "node:crypto";

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

/**
 * Whether two JSON values have the same canonical JSON (canonicalJson(a) === canonicalJson(b)),
 * decided by walking both rather than writing either out: what verification asks of every stored
 * event's payload. A value canonicalJson has no form for (a number that is not finite, a
 * function) is the same as nothing, itself included.
 */
export function sameCanonicalJson(a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a !== typeof b) return false;
  switch (typeof a) {
    case "boolean":
    case "string":
      return a === b;
    case "number":
      // -0 and 0 print alike; a number that is not finite has no canonical form.
      return Number.isFinite(a) && a === b;
    case "object": {
      if (Array.isArray(a) !== Array.isArray(b)) return false;
      if (Array.isArray(a)) {
        const other = b as unknown[];
        if (a.length !== other.length) return false;
        for (let i = 0; i < a.length; i++) {
          if (i in a !== i in other) return false;
          if (i in a && !sameCanonicalJson(a[i], other[i])) return false;
        }
        return true;
      }
      const left = a as Record<string, unknown>;
      const right = b as Record<string, unknown>;
      // canonicalJson leaves out keys whose value is undefined.
      let count = 0;
      for (const key of Object.keys(left)) {
        if (left[key] === undefined) continue;
        count += 1;
        if (!Object.prototype.hasOwnProperty.call(right, key) || !sameCanonicalJson(left[key], right[key])) return false;
      }
      for (const key of Object.keys(right)) if (right[key] !== undefined) count -= 1;
      return count === 0;
    }
    default:
      return false;
  }
}

/** RFC 0019's hash notation: `sha256:` and the unpadded base64url of the SHA-256 digest. */
export const sha256Tag = (data: string | Uint8Array): string => `sha256:${hash("sha256", data, "base64url")}`;

/** The 32 digest bytes of a `sha256:<base64url>` value, or null when it is not one. */
export function digestOfTag(tag: string): Buffer | null {
  if (!/^sha256:[A-Za-z0-9_-]{43}$/.test(tag)) return null;
  const bytes = Buffer.from(tag.slice(7), "base64url");
  return bytes.length === 32 ? bytes : null;
}

/** `sha256:<base64url>` of 32 digest bytes. */
export const tagOfDigest = (digest: Uint8Array): string => `sha256:${Buffer.from(digest).toString("base64url")}`;
