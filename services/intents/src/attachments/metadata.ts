/**
 * The attachment metadata keys of spec 2.7, checked against the mime type they apply to.
 *
 * | key        | applies to     | value                      |
 * |------------|----------------|----------------------------|
 * | width      | images, video  | positive integer (pixels)  |
 * | height     | images, video  | positive integer (pixels)  |
 * | duration   | audio, video   | positive number (seconds)  |
 * | pages      | documents      | positive integer           |
 * | encoding   | audio          | non-empty string           |
 * | frame_rate | video          | positive number (fps)      |
 *
 * A known key on a mime type it does not apply to is refused (pages on an image says the
 * client mistook what it attached). Keys the spec does not name are free-form.
 */

export type MediaFamily = "image" | "video" | "audio" | "document" | "other";

/**
 * Documents: PDF, word-processor, spreadsheet and presentation formats (Microsoft, OpenDocument,
 * Apple iWork), RTF, EPUB and every text/* type (text paginates when printed).
 */
const DOCUMENT_TYPES = new Set(["application/pdf", "application/msword", "application/rtf", "application/epub+zip", "application/x-pdf"]);
const DOCUMENT_PREFIXES = [
  "application/vnd.openxmlformats-officedocument.",
  "application/vnd.ms-word",
  "application/vnd.ms-excel",
  "application/vnd.ms-powerpoint",
  "application/vnd.oasis.opendocument.",
  "application/vnd.apple.pages",
  "application/vnd.apple.numbers",
  "application/vnd.apple.keynote",
];

/** The family of a mime type ("image/png; x=y" is an image); case and parameters do not matter. */
export function mediaFamily(mimeType: string): MediaFamily {
  const essence = mimeType.split(";")[0]!.trim().toLowerCase();
  const [type] = essence.split("/");
  if (type === "image" || type === "video" || type === "audio") return type;
  if (type === "text" || DOCUMENT_TYPES.has(essence) || DOCUMENT_PREFIXES.some((prefix) => essence.startsWith(prefix))) return "document";
  return "other";
}

const positiveInteger = (value: unknown) => typeof value === "number" && Number.isInteger(value) && value > 0;
const positiveNumber = (value: unknown) => typeof value === "number" && Number.isFinite(value) && value > 0;
const nonEmptyString = (value: unknown) => typeof value === "string" && value.trim().length > 0 && value.length <= 200;

interface KeyRule {
  families: MediaFamily[];
  /** What the applicable families are called in a message. */
  appliesTo: string;
  valid: (value: unknown) => boolean;
  expected: string;
}

export const METADATA_RULES: Record<string, KeyRule> = {
  width: { families: ["image", "video"], appliesTo: "images and video", valid: positiveInteger, expected: "a positive integer (pixels)" },
  height: { families: ["image", "video"], appliesTo: "images and video", valid: positiveInteger, expected: "a positive integer (pixels)" },
  duration: { families: ["audio", "video"], appliesTo: "audio and video", valid: positiveNumber, expected: "a positive number of seconds" },
  pages: { families: ["document"], appliesTo: "documents", valid: positiveInteger, expected: "a positive integer (page count)" },
  encoding: { families: ["audio"], appliesTo: "audio", valid: nonEmptyString, expected: "a non-empty string of at most 200 characters" },
  frame_rate: { families: ["video"], appliesTo: "video", valid: positiveNumber, expected: "a positive number (frames per second)" },
};

export interface MetadataIssue {
  key: string;
  message: string;
}

/** Every problem with the known keys of `metadata` for `mimeType`; empty when it is acceptable. */
export function metadataIssues(mimeType: string, metadata: Record<string, unknown>): MetadataIssue[] {
  const family = mediaFamily(mimeType);
  const issues: MetadataIssue[] = [];
  for (const [key, value] of Object.entries(metadata)) {
    // Own keys only: "toString" or "constructor" are free-form keys, not rules inherited from Object.prototype.
    const rule = Object.hasOwn(METADATA_RULES, key) ? METADATA_RULES[key] : undefined;
    if (!rule) continue;
    if (!rule.families.includes(family)) {
      issues.push({ key, message: `metadata.${key} applies to ${rule.appliesTo}, not to ${mimeType}` });
    } else if (!rule.valid(value)) {
      issues.push({ key, message: `metadata.${key} must be ${rule.expected} for ${mimeType}, not ${shown(value)}` });
    }
  }
  return issues;
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
