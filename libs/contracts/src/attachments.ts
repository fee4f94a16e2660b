import { z } from "./zod";
import { JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit, seqCursor } from "./common";
import { command, IfMatch, IntentRef } from "./command";

/**
 * Attachments (spec 2.7, 4.3): the service keeps only a reference to bytes stored elsewhere.
 * The storage URL is validated as a URL and never fetched.
 */

export const Attachment = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    filename: z.string(),
    mime_type: z.string(),
    size: z.number().int().openapi({ description: "bytes" }),
    storage_url: z.string().openapi({ description: "where the bytes live; stored as given, never fetched" }),
    metadata: JsonObject,
    uploaded_by: z.string(),
    created_at: Timestamp,
  })
  .openapi("Attachment");
export type Attachment = z.infer<typeof Attachment>;

/** RFC 6838 type and subtype names, optionally followed by parameters (`text/plain; charset=utf-8`). */
const MIME_TOKEN = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}";
const MIME_TYPE_PATTERN = new RegExp(`^${MIME_TOKEN}/${MIME_TOKEN}(\\s*;\\s*[A-Za-z0-9!#$&^_.+-]+=("[^"]*"|[^;\\s"]+))*$`);

export const MimeType = z
  .string()
  .max(255)
  .regex(MIME_TYPE_PATTERN, 'must be a media type "type/subtype", such as image/png or application/pdf');

/** The URL schemes an attachment may point at: web servers and S3-style object stores. */
export const STORAGE_URL_SCHEMES = ["http:", "https:", "s3:"] as const;

/** s3://bucket/key: a bucket name as S3 allows it, then a non-empty object key. */
const S3_URL_PATTERN = /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\/.+$/;

/**
 * An absolute http, https or s3 URL. Credentials in the URL (`user:pass@host`) are refused: the
 * reference is shown to everyone who can read the intent and travels in no secret-free form.
 */
export const StorageUrl = z
  .string()
  .max(4096)
  .superRefine((value, ctx) => {
    let url: URL;
    // The URL parser silently drops tabs and newlines and trims spaces and controls, so such a
    // string would pass as the URL it parses to while the one stored (and shown to every reader,
    // who may put it in a header or a link) still carries them.
    if (/[\u0000-\u0020\u007f]/.test(value)) {
      ctx.addIssue({ code: "custom", message: "must not contain spaces or control characters; percent-encode them (%20)" });
      return;
    }
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value)) {
      ctx.addIssue({ code: "custom", message: "must be an absolute URL (http, https or s3) such as https://host/path" });
      return;
    }
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be an absolute URL (http, https or s3)" });
      return;
    }
    if (!(STORAGE_URL_SCHEMES as readonly string[]).includes(url.protocol)) {
      ctx.addIssue({ code: "custom", message: `the scheme ${url.protocol.replace(/:$/, "")} is not accepted; use http, https or s3` });
      return;
    }
    if (url.username || url.password) {
      ctx.addIssue({ code: "custom", message: "must not carry credentials (user:password@); use a pre-signed URL or credentials held by the reader" });
      return;
    }
    if (url.protocol === "s3:") {
      if (!S3_URL_PATTERN.test(value.replace(/^s3:/i, "s3:"))) ctx.addIssue({ code: "custom", message: "an s3 URL is s3://<bucket>/<key> with a valid bucket name and a non-empty key" });
    } else if (!url.hostname) {
      ctx.addIssue({ code: "custom", message: "an http or https URL needs a host" });
    }
  })
  .openapi({ description: "absolute http, https or s3://bucket/key URL; never fetched by the server", example: "s3://media/reports/q3.pdf" });

export const CreateAttachmentBody = z
  .object({
    filename: z
      .string()
      .trim()
      .min(1, "filename must not be empty")
      .max(1000)
      .regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters"),
    mime_type: MimeType,
    size: z.number().int("size must be a whole number of bytes").min(0, "size must not be negative").max(Number.MAX_SAFE_INTEGER),
    storage_url: StorageUrl,
    metadata: boundedJsonObject(16 * 1024).default({}).openapi({
      description:
        "free-form, but the keys of spec 2.7 are checked against the mime type: width/height (images, video; positive integers), " +
        "duration (audio, video; positive seconds), pages (documents; positive integer), encoding (audio; non-empty string), " +
        "frame_rate (video; positive number)",
    }),
  })
  .strict()
  .openapi("CreateAttachment");
export type CreateAttachmentBody = z.infer<typeof CreateAttachmentBody>;

export const AttachmentList = z
  .object({
    attachments: z.array(Attachment),
    next_cursor: z.string().openapi({ description: "pass as `after` for the attachments added after this page" }),
    has_more: z.boolean(),
  })
  .openapi("AttachmentList");

export const ListAttachmentsQuery = z.object({
  after: seqCursor("attachments added"),
  limit: pageLimit(500, 1000),
});

export const attachmentCommands = {
  create: command("intents", "attachments.create", IntentRef.merge(IfMatch).extend({ body: CreateAttachmentBody }), Attachment, ["GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "VERSION_MISMATCH"]),
  list: command("intents", "attachments.list", IntentRef.extend({ query: ListAttachmentsQuery }), AttachmentList, ["INTENT_NOT_FOUND"]),
  delete: command("intents", "attachments.delete", IntentRef.merge(IfMatch).extend({ attachment_id: Uuid }), Attachment, ["ATTACHMENT_NOT_FOUND", "INTENT_NOT_FOUND"]),
} as const;
