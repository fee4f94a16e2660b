import { z } from "./zod";
import { errors } from "./errors";

export const Timestamp = z.string().openapi({ description: "ISO 8601, UTC, explicit +00:00 offset", example: "2026-11-22T06:53:03.123+00:00" });
/**
 * A UUID in any letter case, read as its one canonical spelling (lower case): an id has one
 * subject, one row and one SSE stream whichever way a client writes it.
 */
export const Uuid = z
  .string()
  .uuid()
  .transform((id) => id.toLowerCase());
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/**
 * Size limits where data enters (spec 8 leaves request sizes open). Every reply must fit in one
 * bus message (NATS max_payload, 1 MiB by default), so no stored value may grow past what a
 * reply can carry: an intent's whole state, any other free-form JSON field, and a page of a list.
 */
export const LIMITS = {
  /** The serialized state of one intent, and the serialized patches of one request. */
  stateBytes: 256 * 1024,
  /** Any other free-form JSON field: event payloads, metadata, constraints, context, values. */
  jsonFieldBytes: 64 * 1024,
  /** The items of one page of any list, serialized; a page always holds at least one item. */
  pageBytes: 512 * 1024,
} as const;

/** UTF-8 bytes of a value's JSON. */
export const jsonBytes = (value: unknown): number => (value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value)));

/**
 * Marks a zod issue as a size limit: the gateway and the bus answer it with 413 and this code
 * instead of a 400 (see validationError in libs/bus).
 */
export const TOO_LARGE_ISSUE = "VALUE_TOO_LARGE";

/** A schema whose value, serialized, must stay within maxBytes (413 VALUE_TOO_LARGE beyond). */
export function withinBytes<T extends z.ZodType>(schema: T, maxBytes: number = LIMITS.jsonFieldBytes): T {
  return schema.superRefine((value, ctx) => {
    const bytes = jsonBytes(value);
    if (bytes > maxBytes) {
      ctx.addIssue({
        code: "custom",
        message: `is ${bytes} bytes of JSON, more than the limit of ${maxBytes}`,
        params: { code: TOO_LARGE_ISSUE, limit_bytes: maxBytes, actual_bytes: bytes },
      });
    }
  }) as unknown as T;
}

/** A free-form JSON object as a request field: bounded in size (LIMITS.jsonFieldBytes unless said). */
export const boundedJsonObject = (maxBytes: number = LIMITS.jsonFieldBytes) => withinBytes(JsonObject, maxBytes);

/** Identifiers of agents and principals: printable, no whitespace or control characters, bounded. */
export const ActorId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s\p{Cc}]+$/u, "must not contain whitespace or control characters");

/**
 * An agent's id, checked the same way wherever one enters: path parameters, bodies, queries and
 * X-Agent-ID (registration refuses what every other route refuses). An ActorId that is not `*`
 * (broadcast in a message's `to`), not `.` or `..` (path segments: `/agents/../memory` must not
 * name an agent) and does not begin with `role:` (role addressing in `to`): each would make an
 * address ambiguous.
 */
export const AgentId = ActorId.refine((id) => id !== "*" && id !== "." && id !== ".." && !id.startsWith("role:"), {
  message: "is not an agent id: *, . and .. and ids beginning with role: are reserved (broadcast, path segments, role addressing)",
});

/** The largest value of a PostgreSQL integer column: counts and sizes stored as int4 stay below it. */
export const INT32_MAX = 2_147_483_647;

/**
 * `after` of a list paged by a row sequence: the next_cursor of the previous page. At most 15
 * digits: every cursor the server issues fits, and a longer one would overflow the bigint it is
 * compared with.
 */
export const seqCursor = (what: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, "after must be a cursor from next_cursor")
    .optional()
    .openapi({ description: `next_cursor of the previous page: ${what} after it` });

/** A positive page size with a default and a ceiling, read from a query string. */
export const pageLimit = (fallback: number, max: number) => z.coerce.number().int().min(1).max(max).default(fallback);

/** The caller, as the gateway established it from the API key and X-Agent-ID. Travels in every command. */
export const Caller = z.object({
  principal: z.string(),
  /** `federation`: a peer server's key, for POST /federation/receive and /federation/callbacks only (docs/federation.md). */
  roles: z.array(z.enum(["admin", "coordinator", "operator", "agent", "federation"])),
  actor: z.string(),
  agent_id: z.string().nullable(),
});
export type Caller = z.infer<typeof Caller>;
export type Role = Caller["roles"][number];

/**
 * A log cursor written as a number: the sequence to read after. Undefined when `after` is not a
 * number (an event id, say); 400 for a number no log can reach (it would overflow the bigint
 * it is compared with).
 */
export function sequenceCursor(after: string): number | undefined {
  if (!/^\d+$/.test(after)) return undefined;
  const sequence = Number(after);
  if (!Number.isSafeInteger(sequence)) throw errors.validation(`after ${after} is larger than any sequence number`);
  return sequence;
}

/**
 * The longest prefix of a page's items whose JSON fits in LIMITS.pageBytes, and at least one
 * item: a page never outgrows a bus message, and every page moves its cursor. `cut` tells that
 * items were left for the next page.
 */
export function fitPage<T>(items: T[], size: (item: T) => number = jsonBytes): { items: T[]; cut: boolean } {
  let total = 0;
  for (let i = 0; i < items.length; i++) {
    total += size(items[i]!) + 1;
    if (total > LIMITS.pageBytes && i > 0) return { items: items.slice(0, i), cut: true };
  }
  return { items, cut: false };
}
