import { z } from "./zod";
import { pageLimit, Timestamp, Uuid } from "./common";
import { command, IntentRef } from "./command";
import { ChainHash } from "./intents";

/**
 * RFC 0019, verifiable event logs (docs/verifiable-logs.md): chain verification, signed
 * checkpoints with a Merkle root over a batch of one intent's events, inclusion proofs, consistency
 * between two checkpoints and the optional external anchor. The shapes are the RFC's and the
 * Python client's (LogCheckpoint, MerkleProof, ChainVerification, ConsistencyProof of models.py).
 */

export const CHECKPOINT_SCOPES = ["intent", "server"] as const;

/** RFC 0019 5.2: a record in an external timestamping service pinning a checkpoint's Merkle root. */
export const TimestampAnchor = z
  .object({
    type: z.literal("external-timestamp"),
    provider: z.string(),
    reference: z.string(),
    timestamp_proof: z.string(),
    anchored_at: Timestamp,
  })
  .openapi("TimestampAnchor");
export type TimestampAnchor = z.infer<typeof TimestampAnchor>;

const Sequence = z.number().int().min(1);

/** RFC 0019 3.2. `signature` is Ed25519 over the canonical JSON of every other field, `anchor` null. */
export const LogCheckpoint = z
  .object({
    checkpoint_id: Uuid,
    intent_id: Uuid.nullable(),
    scope: z.enum(CHECKPOINT_SCOPES),
    merkle_root: ChainHash,
    event_count: z.number().int().min(1),
    first_sequence: Sequence,
    last_sequence: Sequence,
    created_at: Timestamp,
    signed_by: z.string().openapi({ description: "did:key of the server's Ed25519 key (the key of #key-1 in its did.json)" }),
    signature: z.string().openapi({ description: "unpadded base64url of the 64-byte Ed25519 signature" }),
    anchor: TimestampAnchor.nullable(),
  })
  .openapi("LogCheckpoint");
export type LogCheckpoint = z.infer<typeof LogCheckpoint>;

/** What the server's identity signs: a checkpoint before signed_by, signature and anchor are added. */
export const CheckpointStatement = LogCheckpoint.pick({
  checkpoint_id: true,
  intent_id: true,
  scope: true,
  merkle_root: true,
  event_count: true,
  first_sequence: true,
  last_sequence: true,
  created_at: true,
}).strict();
export type CheckpointStatement = z.infer<typeof CheckpointStatement>;

export const CheckpointSignature = z.object({ signed_by: z.string(), signature: z.string() });

export const CHAIN_BREAK_REASONS = [
  /** No event at the sequence the log must have next (a deleted or never written event). */
  "sequence_gap",
  /** The stored row has no hash. */
  "hash_missing",
  /** previous_event_hash is not the event_hash of the event before. */
  "previous_hash_mismatch",
  /** The event's content no longer gives its event_hash. */
  "hash_mismatch",
  /** The row's columns and its served (wire) form disagree. */
  "row_mismatch",
  /** The intent counts more events than its log holds (events removed from the end). */
  "events_missing_at_end",
] as const;

export const ChainBreak = z
  .object({
    sequence: z.number().int(),
    event_id: Uuid.nullable(),
    reason: z.enum(CHAIN_BREAK_REASONS),
    expected: z.string().nullable(),
    found: z.string().nullable(),
    message: z.string(),
  })
  .openapi("ChainBreak");
export type ChainBreak = z.infer<typeof ChainBreak>;

export const CheckpointBreak = z
  .object({
    checkpoint_id: Uuid,
    first_sequence: z.number().int(),
    last_sequence: z.number().int(),
    reason: z.enum(["merkle_root_mismatch", "events_missing", "signature_invalid"]),
    message: z.string(),
  })
  .openapi("CheckpointBreak");
export type CheckpointBreak = z.infer<typeof CheckpointBreak>;

/** RFC 0019 6.1 with the client's ChainVerification (valid / chain_valid, breaks). */
export const ChainVerification = z
  .object({
    intent_id: Uuid,
    event_count: z.number().int(),
    first_sequence: z.number().int(),
    last_sequence: z.number().int(),
    chain_valid: z.boolean(),
    valid: z.boolean().openapi({ description: "the same as chain_valid (the Python client reads either)" }),
    breaks: z.array(ChainBreak).openapi({ description: "every break found, in sequence order (the first break first), at most 100" }),
    breaks_truncated: z.boolean(),
    checkpoints_checked: z.number().int(),
    checkpoint_breaks: z.array(CheckpointBreak),
  })
  .openapi("ChainVerification");
export type ChainVerification = z.infer<typeof ChainVerification>;

export const MerkleProofEntry = z.object({ hash: ChainHash, position: z.enum(["left", "right"]) }).openapi("MerkleProofEntry");

/** RFC 0019 4.1. */
export const MerkleProof = z
  .object({
    event_id: Uuid,
    event_hash: ChainHash,
    sequence: z.number().int(),
    checkpoint_id: Uuid,
    merkle_root: ChainHash,
    proof_hashes: z.array(MerkleProofEntry),
    leaf_index: z.number().int().min(0),
  })
  .openapi("MerkleProof");
export type MerkleProof = z.infer<typeof MerkleProof>;

export const BoundaryEvent = z.object({ sequence: z.number().int(), event_hash: ChainHash, previous_event_hash: ChainHash.nullable() });

/** RFC 0019 6.2. */
export const ConsistencyProof = z
  .object({
    from_checkpoint: Uuid,
    to_checkpoint: Uuid,
    consistent: z.boolean(),
    boundary_event: BoundaryEvent.nullable(),
    events_checked: z.number().int(),
    reason: z.string().nullable().openapi({ description: "why the two are not consistent; null when they are" }),
  })
  .openapi("ConsistencyProof");
export type ConsistencyProof = z.infer<typeof ConsistencyProof>;

export const CreateCheckpointBody = z
  .object({
    intent_id: Uuid,
    scope: z
      .enum(["intent"], { error: "this server keeps intent-scoped checkpoints only: scope must be intent (docs/verifiable-logs.md)" })
      .default("intent"),
  })
  .strict()
  .openapi("CreateCheckpoint");

const anchoredAt = z
  .string()
  .max(64)
  .refine((value) => Number.isFinite(Date.parse(value)), "anchored_at must be an ISO 8601 timestamp");

/**
 * The anchor an operator obtained from an external timestamping service for a checkpoint's root
 * (RFC 0019 5.3): the server records it, once; it calls no timestamping service itself.
 */
export const AnchorCheckpointBody = z
  .object({
    type: z.literal("external-timestamp").default("external-timestamp"),
    provider: z.string().trim().min(1).max(200),
    reference: z.string().min(1).max(2000),
    timestamp_proof: z.string().min(1).max(65_536),
    anchored_at: anchoredAt.optional(),
  })
  .strict()
  .openapi("AnchorCheckpoint");

export const ListCheckpointsQuery = z.object({
  intent_id: Uuid.optional(),
  scope: z.enum(CHECKPOINT_SCOPES).optional(),
  after: Uuid.optional().openapi({ description: "a checkpoint_id: the checkpoints listed after it" }),
  limit: pageLimit(100, 1000),
});

export const ConsistencyQuery = z.object({ from_checkpoint: Uuid, to_checkpoint: Uuid });

/** GET /intents/{id}/events/hashchain (the MCP server's openintent_get_hash_chain): a range of the chain. */
export const MAX_HASH_CHAIN_EVENTS = 1000;
export const HashChainQuery = z
  .object({
    from: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(1).openapi({ description: "first sequence; default 1" }),
    to: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional().openapi({ description: `last sequence; default and at most from + ${MAX_HASH_CHAIN_EVENTS - 1}` }),
  })
  .refine((q) => q.to === undefined || q.to >= q.from, { message: "to must not be below from", path: ["to"] });

export const HashChainLink = z
  .object({ sequence: z.number().int(), event_id: Uuid, event_type: z.string(), created_at: Timestamp, previous_event_hash: ChainHash.nullable(), event_hash: ChainHash.nullable() })
  .openapi("HashChainLink");
export const HashChain = z
  .object({
    intent_id: Uuid,
    algorithm: z.literal("sha256"),
    from_sequence: z.number().int(),
    to_sequence: z.number().int().openapi({ description: "the last sequence asked for (capped)" }),
    last_sequence: z.number().int().openapi({ description: "the intent's newest event" }),
    links: z.array(HashChainLink).openapi({ description: "the stored chain fields of each event in the range, in sequence order; a missing sequence is missing here (GET /intents/{id}/events/verify names it)" }),
    has_more: z.boolean().openapi({ description: "events after to_sequence exist" }),
  })
  .openapi("HashChain");
export type HashChain = z.infer<typeof HashChain>;

const CheckpointRef = z.object({ checkpoint_id: Uuid });

/** Served by the intents service, which owns the logs. */
export const verifiableLogCommands = {
  verify: command("intents", "events.verify", IntentRef, ChainVerification, ["INTENT_NOT_FOUND"]),
  createCheckpoint: command("intents", "checkpoints.create", z.object({ body: CreateCheckpointBody }), LogCheckpoint, [
    "INTENT_NOT_FOUND",
    "NOTHING_TO_CHECKPOINT",
    "LOG_TAMPERED",
    "SIGNING_UNAVAILABLE",
  ]),
  listCheckpoints: command("intents", "checkpoints.list", z.object({ query: ListCheckpointsQuery }), z.array(LogCheckpoint).openapi("CheckpointList")),
  getCheckpoint: command("intents", "checkpoints.get", CheckpointRef, LogCheckpoint, ["CHECKPOINT_NOT_FOUND"]),
  proof: command("intents", "checkpoints.proof", CheckpointRef.extend({ event_id: Uuid }), MerkleProof, ["CHECKPOINT_NOT_FOUND", "EVENT_NOT_IN_CHECKPOINT", "LOG_TAMPERED"]),
  consistency: command("intents", "checkpoints.consistency", z.object({ query: ConsistencyQuery }), ConsistencyProof, ["CHECKPOINT_NOT_FOUND", "CHECKPOINTS_NOT_COMPARABLE"]),
  /** The MCP server's paths under the intent (docs/compatibility.md). */
  hashChain: command("intents", "events.hashchain", IntentRef.extend({ query: HashChainQuery }), HashChain, ["INTENT_NOT_FOUND"]),
  eventProof: command("intents", "events.proof", IntentRef.extend({ event_id: Uuid }), MerkleProof, ["INTENT_NOT_FOUND", "EVENT_NOT_IN_CHECKPOINT", "LOG_TAMPERED"]),
  intentCheckpoint: command("intents", "checkpoints.get_of_intent", IntentRef.extend({ checkpoint_id: Uuid }), LogCheckpoint, ["CHECKPOINT_NOT_FOUND", "INTENT_NOT_FOUND"]),
  latestCheckpoint: command("intents", "checkpoints.latest", IntentRef, LogCheckpoint, ["CHECKPOINT_NOT_FOUND", "INTENT_NOT_FOUND"]),
  anchor: command("intents", "checkpoints.anchor", CheckpointRef.extend({ body: AnchorCheckpointBody }), LogCheckpoint, ["CHECKPOINT_NOT_FOUND", "CHECKPOINT_ANCHORED"]),
} as const;
