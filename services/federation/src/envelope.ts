import { z } from "zod";
import { AgentId, DelegationScopeBody, FederationPolicyBody, JsonObject, Uuid } from "@intentmesh/contracts";

/** The body of POST /api/v1/federation/receive (docs/federation.md 4.3). */
export const Envelope = z
  .object({
    envelope_version: z.literal("1"),
    dispatch_id: Uuid,
    idempotency_key: z.string().min(1).max(300),
    source_server: z.string().url().max(2048),
    source_did: z.string().startsWith("did:web:").max(1024),
    target_server: z.string().url().max(2048),
    intent_id: Uuid,
    intent_title: z.string().trim().min(1).max(500),
    intent_description: z.string().max(20_000).nullable(),
    intent_state: JsonObject,
    constraints: JsonObject,
    agent_id: AgentId.nullable(),
    delegation_scope: DelegationScopeBody,
    governance: FederationPolicyBody,
    callback_url: z.string().url().max(2048),
    trace_context: z.record(z.string().max(64), z.string().max(512)),
    created_at: z.string().max(40),
  })
  .strict();
export type Envelope = z.infer<typeof Envelope>;

export const CALLBACK_EVENT_TYPES = ["state_delta", "status_changed", "budget_warning", "completed", "failed"] as const;

/** The body of a callback (docs/federation.md 4.6). */
export const CallbackBody = z
  .object({
    dispatch_id: Uuid,
    event_type: z.enum(CALLBACK_EVENT_TYPES),
    remote_intent_id: Uuid,
    /** The intent event the callback reports (type, payload), as the remote log holds it. */
    event: z.object({ id: Uuid, event_type: z.string().max(128), payload: JsonObject, created_at: z.string().max(40) }),
    idempotency_key: z.string().min(1).max(300),
    timestamp: z.string().max(40),
  })
  .strict();
export type CallbackBody = z.infer<typeof CallbackBody>;
