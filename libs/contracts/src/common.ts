import { z } from "./zod";

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
