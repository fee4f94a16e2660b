import { z } from "./zod";
import { errors } from "./errors";

export const Timestamp = z.string().openapi({ description: "ISO 8601, UTC, explicit +00:00 offset", example: "2026-11-22T06:53:03.123+00:00" });
export const Uuid = z.string().uuid();
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** Identifiers of agents and principals: printable, no whitespace, bounded. */
export const ActorId = z.string().min(1).max(200).regex(/^[^\s]+$/, "must not contain whitespace");

/** A positive page size with a default and a ceiling, read from a query string. */
export const pageLimit = (fallback: number, max: number) => z.coerce.number().int().min(1).max(max).default(fallback);

/** The caller, as the gateway established it from the API key and X-Agent-ID. Travels in every command. */
export const Caller = z.object({
  principal: z.string(),
  roles: z.array(z.enum(["admin", "coordinator", "operator", "agent"])),
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
