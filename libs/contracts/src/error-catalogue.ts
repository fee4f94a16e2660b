/** Checks each entry's shape while keeping the literal keys. */
const catalogue = <T extends Record<string, { status: number; title: string; retryAfterSeconds?: number }>>(entries: T): T => entries;

/**
 * The error catalogue: every error code the server answers with, its HTTP status and a short
 * title. An AppError is built from a code of this catalogue only (its constructor takes an
 * ErrorCode and no status), so an unlisted code or a status that disagrees does not compile;
 * errors rebuilt from the bus are checked against it (AppError.fromWire).
 *
 * `retryAfterSeconds` marks a conflict that resolves by itself (the same request, sent again after
 * that many seconds, gets its answer): the gateway sends it as Retry-After and the SDK waits and
 * replays instead of failing.
 *
 * VALIDATION_ERROR (federation) and VALIDATION_FAILED (everything else) are both listed: they
 * are what clients see today; unifying them would change the wire.
 */
export const errorCatalogue = catalogue({
  ACCESS_DENIED: { status: 403, title: "Memory access denied" },
  ACCESS_REQUEST_DECIDED: { status: 409, title: "The access request was already decided" },
  ACCESS_REQUEST_NOT_FOUND: { status: 404, title: "Access request not found" },
  ACCESS_REQUESTS_FULL: { status: 409, title: "The intent has too many pending access requests" },
  ACL_ENTRY_NOT_FOUND: { status: 404, title: "Access-control entry not found" },
  ACL_FULL: { status: 409, title: "The intent's access-control list is full" },
  AGENT_ALREADY_REGISTERED: { status: 409, title: "The agent id is already registered" },
  AGENT_DRAINING: { status: 409, title: "The agent is draining and takes no new work" },
  AGENT_GONE: { status: 410, title: "The agent was deregistered" },
  AGENT_ID_RESERVED: { status: 403, title: "The agent id belongs to another API key" },
  AGENT_KEY_MISMATCH: { status: 403, title: "The agent belongs to another API key" },
  AGENT_MISMATCH: { status: 400, title: "The agent in the body differs from the acting agent" },
  AGENT_NOT_ACTIVE: { status: 409, title: "The agent is not active" },
  AGENT_NOT_BOUND: { status: 403, title: "The API key is not bound to this agent" },
  AGENT_NOT_FOUND: { status: 404, title: "Agent not found" },
  AMBIGUOUS_TOOL: { status: 409, title: "Several credentials offer the tool; name the credential" },
  APPROVAL_NOT_FOUND: { status: 404, title: "Approval not found" },
  APPROVAL_NOT_PENDING: { status: 409, title: "The approval was already decided" },
  ASSIGNMENT_NOT_FOUND: { status: 404, title: "Assignment not found" },
  ATTACHMENT_NOT_FOUND: { status: 404, title: "Attachment not found" },
  /** The body parser refused the request with another 4xx; its own status is kept (gateway http.ts). */
  BAD_REQUEST: { status: 400, title: "The request could not be read" },
  BUDGET_EXCEEDED: { status: 403, title: "The cost would exceed the budget" },
  CAPACITY_EXCEEDED: { status: 429, title: "Memory Capacity Exceeded" },
  CHALLENGE_INVALID: { status: 403, title: "The identity challenge is unknown, used or expired" },
  CHANNEL_CLOSED: { status: 409, title: "The channel is closed" },
  CHANNEL_NAME_TAKEN: { status: 409, title: "The intent already has a channel of that name" },
  CHANNEL_NOT_FOUND: { status: 404, title: "Channel not found" },
  CHECKPOINTS_NOT_COMPARABLE: { status: 422, title: "The two checkpoints are not of one log, in order" },
  CHECKPOINT_ANCHORED: { status: 409, title: "The checkpoint is already anchored" },
  CHECKPOINT_NOT_FOUND: { status: 404, title: "Checkpoint not found" },
  COST_AGENTS_FULL: { status: 409, title: "The intent has too many distinct cost agents" },
  CREDENTIALS_IN_MESSAGE: { status: 400, title: "The message carries a credential" },
  CREDENTIAL_EXPIRED: { status: 403, title: "The credential has expired" },
  CREDENTIAL_LABEL_TAKEN: { status: 409, title: "The vault already has a credential with that label" },
  CREDENTIAL_NOT_FOUND: { status: 404, title: "Credential not found" },
  CREDENTIAL_REVOKED: { status: 403, title: "The credential was revoked" },
  CROSS_INTENT_MESSAGE: { status: 403, title: "A message may not cross to another intent" },
  DELEGATION_DEPTH_EXHAUSTED: { status: 403, title: "The delegation depth is exhausted" },
  DEPENDENCY_CYCLE: { status: 409, title: "The dependency would close a cycle in the intent graph" },
  DEPENDENCY_EXISTS: { status: 409, title: "The intent already depends on that intent" },
  DEPENDENCY_LIMIT: { status: 409, title: "The intent has as many dependencies as it may have" },
  DEPENDENCY_NOT_FOUND: { status: 404, title: "Dependency not found" },
  DISPATCH_FAILED: { status: 502, title: "The remote server refused or failed the dispatch" },
  DISPATCH_IN_PROGRESS: { status: 409, title: "A dispatch with this idempotency key is in progress", retryAfterSeconds: 1 },
  DISPATCH_NOT_FOUND: { status: 404, title: "Dispatch not found" },
  DISPATCH_TIMEOUT: { status: 502, title: "The remote server did not answer the dispatch in time" },
  ENTRY_EXISTS: { status: 409, title: "A memory entry with that key exists" },
  ENTRY_NOT_FOUND: { status: 404, title: "Memory entry not found" },
  EVENT_NOT_IN_CHECKPOINT: { status: 404, title: "The event is not in the checkpoint" },
  FEDERATION_DISABLED: { status: 404, title: "Federation is not enabled" },
  FEDERATION_LOOP: { status: 409, title: "The dispatch would loop back" },
  FIELD_NOT_ALLOWED: { status: 400, title: "The field does not apply to this memory type" },
  FORBIDDEN: { status: 403, title: "Forbidden" },
  GOVERNANCE_VIOLATION: { status: 403, title: "The intent's governance policy refuses this" },
  GRANT_CONTEXT_MISMATCH: { status: 403, title: "The grant is bound to another intent or task" },
  GRANT_DORMANT: { status: 403, title: "The grant is dormant while its agent is deregistered" },
  GRANT_EXHAUSTED: { status: 403, title: "The grant has used all its invocations" },
  GRANT_EXPIRED: { status: 403, title: "The grant has expired" },
  GRANT_NOT_FOUND: { status: 404, title: "Grant not found" },
  GRANT_PARAMETER_DENIED: { status: 403, title: "A parameter violates the grant's constraints" },
  GRANT_RATE_LIMITED: { status: 429, title: "The grant has exceeded its rate limit" },
  GRANT_REVOKED: { status: 403, title: "The grant was revoked" },
  GRANT_SCOPE_INSUFFICIENT: { status: 403, title: "The tool is not in the grant's scopes" },
  GRANT_SUSPENDED: { status: 403, title: "The grant is suspended" },
  GRAPH_INCOMPLETE: { status: 409, title: "The intent's dependencies or children are not all completed" },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: "The idempotency key was used for another request" },
  INTENT_ACCESS_DENIED: { status: 403, title: "The intent's access-control list does not give the caller this permission" },
  IDENTITY_EXISTS: { status: 409, title: "The agent already has an identity; rotate its key" },
  IDENTITY_NOT_FOUND: { status: 404, title: "The agent has no registered identity" },
  INTENT_CLOSED: { status: 409, title: "The intent is in a terminal status" },
  INTENT_ENDED: { status: 409, title: "The intent is completed or abandoned" },
  INTENT_EXISTS: { status: 409, title: "An intent with that id exists, created by someone else" },
  INTENT_NOT_FOUND: { status: 404, title: "Intent not found" },
  INTENT_SUSPENDED: { status: 409, title: "The intent is suspended" },
  INTERNAL_ERROR: { status: 500, title: "Internal error" },
  INVALID_AGENT_TRANSITION: { status: 409, title: "The agent status transition is not allowed" },
  INVALID_IF_MATCH: { status: 400, title: "The If-Match header is not a version" },
  INVALID_JSON: { status: 400, title: "The body is not valid JSON" },
  JSON_TOO_DEEP: { status: 400, title: "A JSON value is nested too deeply" },
  LOG_TAMPERED: { status: 409, title: "The stored event log no longer matches its hashes or checkpoints" },
  LONE_SURROGATE: { status: 400, title: "A text holds a lone UTF-16 surrogate" },
  INVALID_POINTER: { status: 400, title: "A JSON pointer is malformed" },
  INVALID_RESPONSE_VALUE: { status: 422, title: "The response value is invalid for the suspension's response type" },
  INVALID_TASK_TRANSITION: { status: 409, title: "The task status transition is not allowed" },
  INVALID_TRANSITION: { status: 409, title: "The intent status transition is not allowed" },
  INVALID_UTF8: { status: 400, title: "The body is not valid UTF-8" },
  KEY_MISMATCH: { status: 409, title: "The key named is not the agent's current key" },
  LEASE_EXPIRED: { status: 412, title: "The lease has expired" },
  LEASE_HELD: { status: 409, title: "Another agent holds the lease" },
  LEASE_NOT_FOUND: { status: 404, title: "Lease not found" },
  LEASE_RELEASED: { status: 412, title: "The lease was released" },
  MEMBER_EXISTS: { status: 409, title: "The intent is already a member of the portfolio" },
  MEMBER_NOT_FOUND: { status: 404, title: "Portfolio member not found" },
  MESSAGE_EXPIRED: { status: 409, title: "The message has expired" },
  MESSAGE_NOT_FOUND: { status: 404, title: "Message not found" },
  MESSAGE_RULE_VIOLATED: { status: 400, title: "The message breaks a type rule of 2.13" },
  NOTHING_TO_CHECKPOINT: { status: 409, title: "The intent has no events after its last checkpoint" },
  NOT_A_MEMBER: { status: 403, title: "Not a member of this explicit channel" },
  NOT_FOUND: { status: 404, title: "Not found" },
  NOT_LEASE_HOLDER: { status: 403, title: "The caller does not hold the lease" },
  NOT_SUSPENDED: { status: 409, title: "The intent is not suspended" },
  NUL_CHARACTER: { status: 400, title: "A text holds a NUL character" },
  NUMBER_NOT_REPRESENTABLE: { status: 400, title: "A number cannot be represented exactly" },
  PARENT_CLOSED: { status: 409, title: "The parent intent is completed or abandoned" },
  PARENT_MISMATCH: { status: 400, title: "parent_intent_id differs from the parent in the path" },
  PATCH_FAILED: { status: 400, title: "The state patch cannot be applied" },
  PAYLOAD_TOO_LARGE: { status: 413, title: "The body is too large" },
  PORTFOLIO_FULL: { status: 409, title: "The portfolio has reached its member limit" },
  PORTFOLIO_NOT_FOUND: { status: 404, title: "Portfolio not found" },
  PRECONDITION_REQUIRED: { status: 428, title: "An If-Match header is required" },
  PROOF_INVALID: { status: 403, title: "The event's proof does not verify" },
  REPLY_TOO_LARGE: { status: 500, title: "The reply of the service was too large" },
  REQUEST_EXPIRED: { status: 409, title: "The request has expired and takes no responses" },
  RESPONSE_TIMEOUT: { status: 504, title: "No response to the request arrived within the timeout" },
  RESERVED_EVENT_TYPE: { status: 400, title: "The event type is reserved to the server" },
  RETRY_NOT_ALLOWED: { status: 409, title: "The retry policy allows no retry" },
  RETRY_POLICY_NOT_FOUND: { status: 404, title: "Retry policy not found" },
  ROUTE_NOT_FOUND: { status: 404, title: "No such endpoint" },
  SCOPE_NOT_AVAILABLE: { status: 400, title: "A scope is not offered by the credential" },
  SELF_APPROVAL: { status: 403, title: "The requester may not decide its own approval" },
  SERVICE_UNAVAILABLE: { status: 503, title: "Service unavailable" },
  SIGNATURE_INVALID: { status: 401, title: "The request signature was refused" },
  SIGNATURE_REJECTED: { status: 403, title: "The signature does not verify against the agent's key" },
  SIGNING_UNAVAILABLE: { status: 503, title: "The server identity cannot sign now" },
  SSRF_BLOCKED: { status: 400, title: "The URL points at a refused address" },
  STATE_TOO_LARGE: { status: 413, title: "The intent state would be too large" },
  SUSPENSION_ACTIVE: { status: 409, title: "The intent already has an active suspension" },
  SUSPENSION_ID_REQUIRED: { status: 422, title: "suspension_id is missing or empty" },
  SUSPENSION_MISMATCH: { status: 409, title: "The response names another suspension" },
  SUSPENSION_PAST_DUE_BEFORE: { status: 409, title: "The suspension would time out before it starts" },
  TASK_ENDED: { status: 409, title: "The task has ended" },
  TASK_NOT_FOUND: { status: 404, title: "Task not found" },
  TASK_SUSPENDED: { status: 409, title: "The task is suspended" },
  TOOL_NOT_CALLABLE: { status: 409, title: "The credential has no HTTP endpoint for the tool" },
  TRIGGER_DEDUPLICATED: { status: 409, title: "The trigger already has as many open intents as it may (deduplication)" },
  TRIGGER_FIRE_FAILED: { status: 422, title: "The trigger's template did not make a valid intent" },
  TRIGGER_NOT_FOUND: { status: 404, title: "Trigger not found" },
  UNAUTHORIZED: { status: 401, title: "Authentication required" },
  UNKNOWN_TASK_REFERENCE: { status: 422, title: "The task refers to an unknown task" },
  UNSUPPORTED_ENCODING: { status: 415, title: "The content encoding is not supported" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: "The content type is not supported" },
  UNTRUSTED_SERVER: { status: 403, title: "The server is not trusted" },
  UPSTREAM_ERROR: { status: 502, title: "Another service answered with an error this one does not know" },
  UPSTREAM_TIMEOUT: { status: 504, title: "The service did not answer in time" },
  VALIDATION_ERROR: { status: 400, title: "Validation failed (the federation service spells it so)" },
  VALIDATION_FAILED: { status: 400, title: "Validation failed" },
  VALUE_NOT_STORABLE: { status: 400, title: "A value cannot be stored" },
  VALUE_TOO_LARGE: { status: 413, title: "A value is too large" },
  VAULT_ACCESS_DENIED: { status: 403, title: "Only the vault's owner may do this" },
  VAULT_NAME_TAKEN: { status: 409, title: "The owner already has a vault with that name" },
  VAULT_NOT_FOUND: { status: 404, title: "Vault not found" },
  VERSION_MISMATCH: { status: 409, title: "The version does not match" },
} as const);

export type ErrorCode = keyof typeof errorCatalogue;

export interface ErrorDefinition {
  code: ErrorCode;
  status: number;
  title: string;
}

/** Seconds after which the same request gets its answer, for a conflict that resolves by itself. */
export const retryAfterSecondsOf = (code: string): number | undefined =>
  isErrorCode(code) ? (errorCatalogue[code] as { retryAfterSeconds?: number }).retryAfterSeconds : undefined;

export const isErrorCode = (code: string): code is ErrorCode => Object.prototype.hasOwnProperty.call(errorCatalogue, code);

/** Every catalogued error, sorted by code (for the OpenAPI document and docs). */
export const listErrors = (): ErrorDefinition[] =>
  (Object.keys(errorCatalogue) as ErrorCode[]).sort().map((code) => ({ code, ...errorCatalogue[code] }));
