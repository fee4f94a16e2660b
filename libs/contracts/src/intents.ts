import { z } from "./zod";
import { ActorId, AgentId, JsonObject, LIMITS, Timestamp, Uuid, boundedJsonObject, pageLimit, withinBytes } from "./common";
import { IntentConstraints } from "./budget";
import { SetAclBody } from "./acl";

/** How many intents one intent may depend on (RFC-0002 sets no bound; docs/graphs.md). */
export const MAX_DEPENDENCIES = 100;

export const INTENT_STATUSES = ["draft", "active", "blocked", "completed", "abandoned", "suspended_awaiting_input"] as const;
export const IntentStatus = z.enum(INTENT_STATUSES);
export type IntentStatus = z.infer<typeof IntentStatus>;

export const Intent = z
  .object({
    id: Uuid,
    title: z.string(),
    description: z.string().nullable(),
    created_by: z.string(),
    status: IntentStatus,
    constraints: JsonObject,
    state: JsonObject,
    confidence: z.number().min(0).max(100),
    version: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
    parent_intent_id: Uuid.nullable().openapi({ description: "the parent intent (RFC-0002); null for a root" }),
    depends_on: z.array(Uuid).openapi({ description: "the intents that must be completed before this one may complete (RFC-0002)" }),
  })
  .openapi("Intent");
export type Intent = z.infer<typeof Intent>;

export const CreateIntentBody = z
  .object({
    title: z.string().trim().min(1, "title must not be empty").max(500),
    description: z.string().max(20_000).nullable().optional(),
    created_by: ActorId.optional(),
    constraints: withinBytes(IntentConstraints).default({}),
    state: boundedJsonObject(LIMITS.stateBytes).default({}),
    confidence: z.number().min(0).max(100).default(0),
    status: z
      .enum(["draft", "active"], { error: "status at creation must be draft or active" })
      .default("draft")
      .openapi({ description: "initial status: draft (the default, table 3.1) or active" }),
    acl: SetAclBody.optional().openapi({ description: "an access-control list the intent starts with (RFC-0011, as PUT /intents/{id}/acl takes it); without one the intent has none" }),
    parent_intent_id: Uuid.nullable().optional().openapi({ description: "the parent intent (RFC-0002): it must exist, not be completed or abandoned, and the caller needs admin on it" }),
    depends_on: z
      .array(Uuid)
      .max(MAX_DEPENDENCIES, `an intent depends on at most ${MAX_DEPENDENCIES} intents`)
      .refine((ids) => new Set(ids).size === ids.length, "depends_on must not name an intent twice")
      .default([])
      .openapi({ description: "intents this one depends on (RFC-0002): each must exist and be readable by the caller" }),
  })
  .strict()
  .openapi("CreateIntent");
export type CreateIntentBody = z.infer<typeof CreateIntentBody>;

export const ListIntentsQuery = z.object({
  status: z
    .string()
    .optional()
    .transform((value) => (value ? value.split(",").map((s) => s.trim()).filter(Boolean) : undefined))
    .pipe(z.array(IntentStatus).optional()),
  created_by: z.string().optional(),
  after: z.string().optional().openapi({ description: "opaque cursor from next_cursor" }),
  limit: pageLimit(50, 500),
});
export type ListIntentsQuery = z.infer<typeof ListIntentsQuery>;

export const IntentPage = z
  .object({ intents: z.array(Intent), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .openapi("IntentPage");

/** A JSON pointer (RFC 6901) in which every ~ is ~0 or ~1; a missing leading slash is implied. */
export const JsonPointer = z
  .string()
  .max(2000)
  .regex(/^(?:[^~]|~[01])*$/, "must be a JSON pointer: every ~ is written ~0 or ~1")
  .openapi({ description: "JSON pointer (RFC 6901); a missing leading slash is implied" });

export const StatePatch = z
  .object({
    op: z.enum(["append", "set", "remove"]),
    path: JsonPointer,
    value: z.unknown().optional(),
  })
  .strict()
  .openapi("StatePatch");
export type StatePatch = z.infer<typeof StatePatch>;

/** Accepts {"patches": [...]} or a bare array of patches. */
export const StatePatchBody = z
  .union([z.array(StatePatch), z.object({ patches: z.array(StatePatch) }).strict()])
  .transform((body) => (Array.isArray(body) ? body : body.patches))
  .pipe(withinBytes(z.array(StatePatch).min(1, "at least one patch is required").max(1000), LIMITS.stateBytes));

export const StatusTransitionBody = z
  .object({ status: IntentStatus, reason: z.string().max(2000).optional() })
  .strict()
  .openapi("StatusTransition");
export type StatusTransitionBody = z.infer<typeof StatusTransitionBody>;

/** Event types: dot-separated tokens of letters, digits, _ and -. They become NATS subject tokens. */
export const EventType = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, "must be dot-separated tokens of letters, digits, _ and -");

/** A hash of the RFC 0019 chain and Merkle trees: `sha256:` and the unpadded base64url of 32 bytes. */
export const ChainHash = z.string().regex(/^sha256:[A-Za-z0-9_-]{43}$/, "must be sha256: and 43 base64url characters");

export const IntentEvent = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    sequence: z.number().int().openapi({ description: "position in this intent's log, from 1, without gaps" }),
    event_type: z.string(),
    actor: z.string(),
    payload: JsonObject,
    created_at: Timestamp,
    trace_id: z.string().optional().openapi({ description: "present when the appending client gave one" }),
    parent_event_id: Uuid.optional().openapi({ description: "present when the appending client gave one" }),
    previous_event_hash: ChainHash.nullable().openapi({ description: "RFC 0019: event_hash of the event before this one in the intent's log; null for the first" }),
    event_hash: ChainHash.openapi({
      description: "RFC 0019: sha256:<base64url> of the canonical JSON (RFC 8785) of this event without event_hash (docs/verifiable-logs.md)",
    }),
  })
  .openapi("Event");
export type IntentEvent = z.infer<typeof IntentEvent>;

/** W3C trace ids are 32 hex digits; other tracers use other forms, so any printable token is kept. */
export const TraceId = z.string().min(1).max(200).regex(/^[^\s]+$/, "must not contain whitespace");

/** RFC-0018 §3.1 proof of a signed event. */
export const EventProof = z
  .object({
    type: z.string().max(100).optional(),
    created: z.string().max(100).optional(),
    verification_method: z.string().max(300).optional(),
    signature: z.string().min(1).max(200),
  })
  .strict();

export const AppendEventBody = z
  .object({
    event_type: EventType,
    actor: ActorId.optional(),
    payload: boundedJsonObject().default({}),
    trace_id: TraceId.nullable().optional().openapi({ description: "correlation id of a distributed trace; stored and returned" }),
    parent_event_id: Uuid.nullable().optional().openapi({ description: "id of the event that caused this one (any intent's); stored and returned" }),
    proof: EventProof.optional().openapi({
      description:
        "RFC-0018 §3: an Ed25519 signature of the acting agent over the canonical JSON of this body without `proof`, plus `intent_id`; a proof that does not verify is refused (403 PROOF_INVALID) and nothing is written (docs/identity.md)",
    }),
  })
  .strict()
  .openapi("AppendEvent");
export type AppendEventBody = z.infer<typeof AppendEventBody>;

export const ListEventsQuery = z.object({
  after: z.string().optional().openapi({ description: "event id or sequence number; events after it" }),
  limit: pageLimit(100, 1000),
  event_type: z.string().optional(),
  tail: z.enum(["true", "false"]).optional().openapi({ description: "true: the last `limit` events (still oldest first)" }),
});
export type ListEventsQuery = z.infer<typeof ListEventsQuery>;

export const EventPage = z
  .object({ events: z.array(IntentEvent), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .openapi("EventPage");
export type EventPage = z.infer<typeof EventPage>;

export const Assignment = z
  .object({
    intent_id: Uuid,
    agent_id: z.string(),
    role: z.string().nullable(),
    assigned_by: z.string(),
    assigned_at: Timestamp,
  })
  .openapi("Assignment");
export type Assignment = z.infer<typeof Assignment>;

export const AssignAgentBody = z
  .object({ agent_id: AgentId, role: z.string().max(100).nullable().optional() })
  .strict()
  .openapi("AssignAgent");

/** A lease carries no status field: RELEASED when released_at is set, EXPIRED when expires_at has passed, else ACTIVE. */
export const Lease = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    agent_id: z.string(),
    scope: z.string(),
    acquired_at: Timestamp,
    expires_at: Timestamp,
    released_at: Timestamp.nullable(),
  })
  .openapi("Lease");
export type Lease = z.infer<typeof Lease>;

export const LeaseScope = z
  .string()
  .min(1)
  .max(500)
  .openapi({ description: "`*` for the whole intent, or a state path such as `research` covering /research and below" });

export const MAX_LEASE_TTL_SECONDS = 86_400;
const LeaseTtl = z.number().int().min(1).max(MAX_LEASE_TTL_SECONDS);

/** ttl_seconds, or its alias duration_seconds (the official clients' name); both, and different, is a contradiction. */
const leaseTerm = {
  ttl_seconds: LeaseTtl.optional().openapi({ description: "seconds the lease lasts from now; default 300" }),
  duration_seconds: LeaseTtl.optional().openapi({ description: "alias of ttl_seconds (the name the official clients send)" }),
};

function refineLeaseTerm(body: { ttl_seconds?: number | undefined; duration_seconds?: number | undefined }, ctx: z.RefinementCtx): void {
  if (body.ttl_seconds !== undefined && body.duration_seconds !== undefined && body.ttl_seconds !== body.duration_seconds) {
    ctx.addIssue({ code: "custom", path: ["duration_seconds"], message: "duration_seconds is an alias of ttl_seconds; send one, or the same value in both" });
  }
}

const withTtl = <T extends { ttl_seconds?: number | undefined; duration_seconds?: number | undefined }>({ duration_seconds, ...rest }: T) => ({
  ...rest,
  ttl_seconds: rest.ttl_seconds ?? duration_seconds ?? 300,
});

export const AcquireLeaseBody = z
  .object({ scope: LeaseScope, ...leaseTerm, agent_id: AgentId.optional() })
  .strict()
  .superRefine(refineLeaseTerm)
  .transform(withTtl)
  .openapi("AcquireLease");
export const RenewLeaseBody = z.object(leaseTerm).strict().superRefine(refineLeaseTerm).transform(withTtl).openapi("RenewLease");

export const ListLeasesQuery = z.object({
  active: z.enum(["true", "false"]).optional().openapi({ description: "true: only leases that are neither released nor expired" }),
});

// What the commands answer (each command carries its output schema).
export const AssignmentList = z.object({ agents: z.array(Assignment) }).passthrough().openapi("AssignmentList");

export const LeaseList = z.object({ leases: z.array(Lease), has_more: z.boolean() }).passthrough().openapi("LeaseList");

export const LeasesHeld = z.object({ held: z.record(z.string(), z.number().int().nonnegative()) });
