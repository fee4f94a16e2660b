import { z } from "./zod";
import { ActorId, AgentId, INT32_MAX, JsonObject, TOO_LARGE_ISSUE, Timestamp, Uuid, jsonBytes, pageLimit } from "./common";
import { command, IfMatch } from "./command";
import { agentSubjectToken } from "./registry";

/**
 * Agent memory (spec 2.14, 3.7, 4.8, 6, 8): working, episodic and semantic entries, served by the
 * memory service on `im.memory.*`. docs/memory.md explains every decision the spec leaves open.
 */

export const MEMORY_TYPES = ["working", "episodic", "semantic"] as const;
export const MemoryType = z.enum(MEMORY_TYPES);
export type MemoryType = z.infer<typeof MemoryType>;

export const MEMORY_PRIORITIES = ["low", "normal", "high"] as const;
export const MemoryPriority = z.enum(MEMORY_PRIORITIES);
export type MemoryPriority = z.infer<typeof MemoryPriority>;

export const SENSITIVITIES = ["public", "internal", "confidential", "restricted"] as const;

/** Access levels on a semantic namespace, weakest first: memory.read < memory.write < memory.admin. */
export const ACCESS_LEVELS = ["none", "read", "write", "admin"] as const;
export const AccessLevel = z.enum(ACCESS_LEVELS);
export type AccessLevel = z.infer<typeof AccessLevel>;

/** Spec 8: a memory value SHOULD NOT exceed 64 KB; this server refuses larger values (413). */
export const MEMORY_VALUE_MAX_BYTES = 64 * 1024;
/** Spec 4.8 rule 4 / 8: default episodic capacity per agent. */
export const DEFAULT_EPISODIC_CAPACITY = 1000;
export const MEMORY_BATCH_MAX = 100;
export const MEMORY_TAGS_MAX = 50;

/** `task_lifetime`, or `duration:<ISO 8601 duration>` such as `duration:PT1H` or `duration:P1DT12H`. */
export const TTL_PATTERN = /^(task_lifetime|duration:P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?)$/;

const MemoryValue = JsonObject.superRefine((value, ctx) => {
  const bytes = jsonBytes(value);
  if (bytes > MEMORY_VALUE_MAX_BYTES) {
    ctx.addIssue({
      code: "custom",
      message:
        `is ${bytes} bytes of JSON, more than the ${MEMORY_VALUE_MAX_BYTES / 1024} KB limit of a memory value: ` +
        "store larger data as an attachment (POST /intents/{id}/attachments) and keep its reference in the value",
      params: { code: TOO_LARGE_ISSUE, limit_bytes: MEMORY_VALUE_MAX_BYTES, actual_bytes: bytes },
    });
  }
});

const Namespace = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^\s\p{Cc}*]+$/u, "must not contain whitespace, control characters or *");
const Key = z.string().min(1).max(512).regex(/^[^\p{Cc}]+$/u, "must not contain control characters");
const Tag = z.string().min(1).max(100).regex(/^[^,\s\p{Cc}]+$/u, "must not contain commas, whitespace or control characters");
const Tags = z.array(Tag).max(MEMORY_TAGS_MAX);
const Ttl = z.string().regex(TTL_PATTERN, "ttl must be task_lifetime or duration:<ISO 8601 duration>, e.g. duration:PT1H");

export const MemoryScope = z
  .object({ task_id: Uuid.nullable().optional(), intent_id: Uuid.nullable().optional() })
  .strict()
  .openapi("MemoryScope");

export const MemoryEntry = z
  .object({
    id: Uuid,
    agent_id: z.string(),
    namespace: z.string(),
    key: z.string(),
    value: JsonObject,
    memory_type: MemoryType,
    scope: z.object({ task_id: Uuid.optional(), intent_id: Uuid.optional() }).nullable(),
    tags: z.array(z.string()),
    ttl: z.string().nullable(),
    version: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Timestamp.nullable(),
    pinned: z.boolean().nullable().openapi({ description: "episodic only (null otherwise)" }),
    priority: MemoryPriority.nullable().openapi({ description: "episodic only (null otherwise)" }),
    curated_by: z.string().nullable(),
    sensitivity: z.enum(SENSITIVITIES).nullable(),
  })
  .openapi("MemoryEntry");
export type MemoryEntry = z.infer<typeof MemoryEntry>;

const entryFields = {
  namespace: Namespace,
  key: Key,
  value: MemoryValue,
  memory_type: MemoryType.default("working"),
  scope: MemoryScope.nullable().optional(),
  tags: Tags.default([]),
  ttl: Ttl.nullable().optional(),
  expires_at: z.string().datetime({ offset: true }).nullable().optional(),
  pinned: z.boolean().optional(),
  priority: MemoryPriority.optional(),
  curated_by: ActorId.nullable().optional(),
  sensitivity: z.enum(SENSITIVITIES).nullable().optional(),
};

/** POST /memory. `agent_id` defaults to the acting agent (X-Agent-ID, else the key's principal). */
export const CreateMemoryBody = z
  .object({ agent_id: AgentId.optional(), ...entryFields })
  .strict()
  .openapi("CreateMemoryEntry");
export type CreateMemoryBody = z.output<typeof CreateMemoryBody>;

/** PATCH /memory/{id} (If-Match required): value and tags (4.8), and the clients' pinned, priority, ttl, expires_at. */
export const PatchMemoryBody = z
  .object({
    value: MemoryValue.optional(),
    tags: Tags.optional(),
    pinned: z.boolean().optional(),
    priority: MemoryPriority.optional(),
    ttl: Ttl.nullable().optional(),
    expires_at: z.string().datetime({ offset: true }).nullable().optional(),
    sensitivity: z.enum(SENSITIVITIES).nullable().optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one of value, tags, pinned, priority, ttl, expires_at, sensitivity" })
  .openapi("PatchMemoryEntry");
export type PatchMemoryBody = z.output<typeof PatchMemoryBody>;

const csv = z
  .string()
  .max(5000)
  .optional()
  .transform((value) => (value ? value.split(",").map((s) => s.trim()).filter(Boolean) : undefined))
  .pipe(z.array(Tag).max(MEMORY_TAGS_MAX).optional());

const boolText = z
  .enum(["true", "false"])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === "true"));

/** GET /memory query parameters (4.8). */
export const MemoryQuery = z
  .object({
    agent_id: AgentId.optional(),
    namespace: z.string().min(1).max(257).optional().openapi({ description: "exact, or a prefix with a trailing *" }),
    key: Key.optional(),
    memory_type: MemoryType.optional(),
    tags: csv.openapi({ description: "comma-separated; the entry has ALL" }),
    tags_any: csv.openapi({ description: "comma-separated; the entry has ANY" }),
    "scope.task_id": Uuid.optional(),
    "scope.intent_id": Uuid.optional(),
    pinned: boolText,
    updated_after: z.string().datetime({ offset: true }).optional(),
    updated_before: z.string().datetime({ offset: true }).optional(),
    limit: pageLimit(100, 1000),
    offset: z.coerce.number().int().min(0).max(INT32_MAX).default(0),
  })
  .strict()
  // Spec 4.8's query table: agent_id is "required for working and episodic queries". X-Agent-ID
  // does not stand in: the parameter names whose memory is read, the header who reads it.
  .superRefine((query, ctx) => {
    if ((query.memory_type === "working" || query.memory_type === "episodic") && !query.agent_id) {
      ctx.addIssue({ code: "custom", path: ["agent_id"], message: `agent_id is required for ${query.memory_type} queries (spec 4.8): name the agent whose memory to read` });
    }
  });
export type MemoryQuery = z.output<typeof MemoryQuery>;

export const MemoryQueryResponse = z
  .object({ entries: z.array(MemoryEntry), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .openapi("MemoryQueryResponse");

/**
 * POST /memory/batch: `{entries: [...]}`, at most 100 items, all or none. An item without `id` is
 * a create (the body of POST /memory); an item with `id` is an update of that entry (the body of
 * PATCH plus `if_match`, the version it was read at, required as on PATCH).
 */
export const BatchUpdateItem = z
  .object({
    id: Uuid,
    if_match: z.number().int().min(0).max(INT32_MAX),
    value: MemoryValue.optional(),
    tags: Tags.optional(),
    pinned: z.boolean().optional(),
    priority: MemoryPriority.optional(),
    ttl: Ttl.nullable().optional(),
    expires_at: z.string().datetime({ offset: true }).nullable().optional(),
    sensitivity: z.enum(SENSITIVITIES).nullable().optional(),
  })
  .strict();
export const BatchItem = z.union([BatchUpdateItem, CreateMemoryBody]);
export const MemoryBatchBody = z
  .object({ entries: z.array(BatchItem).min(1).max(MEMORY_BATCH_MAX) })
  .strict()
  .openapi("MemoryBatch");
export type MemoryBatchBody = z.output<typeof MemoryBatchBody>;

/** DELETE /memory/batch: a filter (the GET /memory parameters, as JSON); at least one of them. Deletes at most 1000 entries per call. */
export const MemoryDeleteFilter = z
  .object({
    agent_id: AgentId.optional(),
    namespace: z.string().min(1).max(257).optional(),
    key: Key.optional(),
    memory_type: MemoryType.optional(),
    tags: Tags.optional(),
    tags_any: Tags.optional(),
    scope: z.object({ task_id: Uuid.optional(), intent_id: Uuid.optional() }).strict().optional(),
    updated_before: z.string().datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((f) => f.namespace || f.key || f.tags?.length || f.tags_any?.length || f.scope?.task_id || f.scope?.intent_id || f.memory_type || f.agent_id, {
    message: "name at least one filter (agent_id, namespace, key, memory_type, tags, tags_any, scope, updated_before)",
  })
  .openapi("MemoryDeleteFilter");
export type MemoryDeleteFilter = z.output<typeof MemoryDeleteFilter>;

/** The namespace permission object of 2.14. */
export const NamespacePermissions = z
  .object({
    default: AccessLevel.default("read"),
    allow: z
      .array(z.object({ agent: AgentId, access: AccessLevel.exclude(["none"]) }).strict())
      .max(1000)
      .default([]),
  })
  .strict();
export const PatchNamespaceBody = z
  .object({ namespace: z.string().optional(), permissions: NamespacePermissions })
  .strict()
  .openapi("NamespacePermission");
export type PatchNamespaceBody = z.output<typeof PatchNamespaceBody>;

const EntryRef = z.object({ entry_id: Uuid });
const NamespaceRef = z.object({ namespace: Namespace });

/**
 * PUT /agents/{id}/memory/{namespace}/{key} (the MCP server's memory_set): creates the entry, or
 * updates its value with If-Match (rule 1). ttl_seconds is ttl `duration:PT<n>S`.
 */
export const PutAgentMemoryBody = z
  .object({
    value: MemoryValue,
    ttl_seconds: z.number().int().min(1).max(10 * 365 * 86_400).nullable().optional(),
    memory_type: MemoryType.default("working"),
    tags: Tags.optional(),
    scope: MemoryScope.nullable().optional(),
  })
  .strict()
  .openapi("PutAgentMemory");
export type PutAgentMemoryBody = z.output<typeof PutAgentMemoryBody>;
const AgentKeyRef = z.object({ agent_id: AgentId, namespace: Namespace, key: Key });

// What the commands answer (each command carries its output schema).
/** The bare list of entries that the clients' routes answer (`raw: true`). */
export const MemoryEntryList = z.array(MemoryEntry);

export const MemoryBatchResult = z.object({ entries: z.array(MemoryEntry) }).passthrough().openapi("MemoryBatchResult");

export const MemoryBatchDeleted = z.object({ deleted: z.number().int(), entry_ids: z.array(Uuid), has_more: z.boolean() }).passthrough().openapi("MemoryBatchDeleted");

export const MemoryEntryDeleted = z.object({ status: z.literal("deleted"), entry_id: Uuid }).passthrough().openapi("MemoryEntryDeleted");

export const MemoryNamespace = z
  .object({
    namespace: z.string(),
    permissions: z.object({}).passthrough(),
    access: z.string(),
    configured: z.boolean(),
    entry_count: z.number().int(),
    version: z.number().int(),
    updated_at: Timestamp.nullable(),
  })
  .passthrough()
  .openapi("MemoryNamespace");

export const MemoryNamespaceList = z.object({ namespaces: z.array(MemoryNamespace) }).passthrough().openapi("MemoryNamespaceList");

export const MemorySummary = z
  .object({
    agent_id: z.string(),
    working: z.object({ entry_count: z.number().int(), total_size_kb: z.number() }).passthrough(),
    episodic: z.object({ entry_count: z.number().int(), capacity: z.number().int(), pinned_count: z.number().int() }).passthrough(),
    semantic_namespaces_accessible: z.array(z.unknown()),
  })
  .passthrough()
  .openapi("MemorySummary");

export const EpisodicCapacity = z.object({ agent_id: z.string(), episodic_capacity: z.number().int().nullable() }).passthrough().openapi("EpisodicCapacity");

export const memoryCommands = {
  create: command("memory", "entries.create", z.object({ body: CreateMemoryBody }), MemoryEntry, ["ACCESS_DENIED", "CAPACITY_EXCEEDED", "ENTRY_EXISTS", "FIELD_NOT_ALLOWED", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "TASK_ENDED"]),
  get: command("memory", "entries.get", EntryRef, MemoryEntry, ["ACCESS_DENIED", "ENTRY_NOT_FOUND"]),
  patch: command("memory", "entries.patch", EntryRef.merge(IfMatch).extend({ body: PatchMemoryBody }), MemoryEntry, ["ACCESS_DENIED", "ENTRY_NOT_FOUND", "GOVERNANCE_VIOLATION", "PRECONDITION_REQUIRED", "VERSION_MISMATCH"]),
  delete: command("memory", "entries.delete", EntryRef, MemoryEntryDeleted, ["ACCESS_DENIED", "ENTRY_NOT_FOUND", "GOVERNANCE_VIOLATION"]),
  /**
   * One command, two answers: a page ({entries, total, limit, offset}) for GET /memory, the bare
   * list (`raw: true`) for the clients' routes; each route documents its branch.
   */
  query: command("memory", "entries.query", z.object({ query: MemoryQuery, raw: z.boolean().default(false) }), z.union([MemoryQueryResponse, MemoryEntryList]), ["AGENT_NOT_FOUND"]),
  batch: command("memory", "entries.batch", z.object({ body: MemoryBatchBody }), MemoryBatchResult, ["VERSION_MISMATCH"]),
  deleteBatch: command("memory", "entries.delete_batch", z.object({ body: MemoryDeleteFilter }), MemoryBatchDeleted),
  namespaces: command("memory", "namespaces.list", z.object({}), MemoryNamespaceList),
  getNamespace: command("memory", "namespaces.get", NamespaceRef, MemoryNamespace),
  patchNamespace: command("memory", "namespaces.patch", NamespaceRef.extend({ body: PatchNamespaceBody }), MemoryNamespace, ["ACCESS_DENIED"]),
  summary: command("memory", "agents.summary", z.object({ agent_id: AgentId }), MemorySummary, ["ACCESS_DENIED", "AGENT_NOT_FOUND"]),
  lookup: command("memory", "agents.lookup", AgentKeyRef, MemoryEntry, ["ACCESS_DENIED", "AGENT_NOT_FOUND", "ENTRY_NOT_FOUND"]),
  put: command("memory", "agents.put", AgentKeyRef.merge(IfMatch).extend({ body: PutAgentMemoryBody }), MemoryEntry, [
    // A create or a patch (by-key.ts), so either's refusals.
    "ACCESS_DENIED", "AGENT_NOT_FOUND", "CAPACITY_EXCEEDED", "ENTRY_EXISTS", "ENTRY_NOT_FOUND", "FIELD_NOT_ALLOWED", "GOVERNANCE_VIOLATION", "INTENT_NOT_FOUND", "PRECONDITION_REQUIRED", "TASK_ENDED", "VERSION_MISMATCH",
  ]),
  setCapacity: command("memory", "agents.capacity", z.object({ agent_id: AgentId, body: z.object({ episodic_capacity: z.number().int().min(1).max(1_000_000).nullable() }).strict() }), EpisodicCapacity, ["ACCESS_DENIED", "AGENT_NOT_FOUND"]),
} as const;

/** The memory event of part 6 (never the value). */
export const MemoryEventPayload = z.object({
  type: z.string(),
  agent_id: z.string(),
  intent_id: Uuid.nullable(),
  task_id: Uuid.nullable(),
  data: JsonObject,
  timestamp: Timestamp,
});
export type MemoryEventPayload = z.infer<typeof MemoryEventPayload>;

/**
 * Memory events without a task or intent context go to the owner's agent stream: the memory
 * service publishes them on `im.evt.memory.<agent token>.<event_type>` (stream IM_MEMORY) and the
 * registry appends them to the agent's own log, which /subscribe/agents/{id} streams.
 */
export const memoryStream = { name: "IM_MEMORY", subjects: ["im.evt.memory.>"] } as const;
export const MEMORY_EVENT_SCHEMA = "im.memory-event/1";
export const AgentMemoryEvent = z.object({ id: Uuid, event_type: z.string(), actor: z.string(), payload: MemoryEventPayload });
export type AgentMemoryEvent = z.infer<typeof AgentMemoryEvent>;
/** The subject of an agent-scoped memory event: the name comes from its definition (event-catalogue.ts memoryEvents). */
export const memoryEventSubject = (agentId: string, definition: { readonly name: `memory.${string}` }) => `im.evt.memory.${agentSubjectToken(agentId)}.${definition.name}`;
export const memoryEventMsgId = (eventId: string) => `memory:${eventId}`;
