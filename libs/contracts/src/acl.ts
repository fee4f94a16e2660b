import { z } from "./zod";
import { ActorId, AgentId, Caller, Timestamp, Uuid } from "./common";
import { command, IfMatch, IntentRef } from "./command";

/**
 * Per-intent access control (RFC-0011; docs/access-control.md). An intent without an access-control
 * list behaves as before: every key its route's roles admit may do everything. With one, each
 * intent-scoped command needs a permission (intent-access.ts) that the caller holds through the
 * ACL's owner, an entry naming it, or the default policy.
 */

/** The three cumulative levels of RFC-0011: each includes the one below it. */
export const INTENT_PERMISSIONS = ["read", "write", "admin"] as const;
export const IntentPermission = z.enum(INTENT_PERMISSIONS);
export type IntentPermission = z.infer<typeof IntentPermission>;

/** `open`: principals without an entry hold the default permission; `closed`: they hold none (the client's AccessPolicy). */
export const AccessPolicy = z.enum(["open", "closed"]);
export type AccessPolicy = z.infer<typeof AccessPolicy>;

/**
 * Who an entry names: `user` an API key's principal, `agent` an acting agent (X-Agent-ID, else the
 * key's principal), `group` an API key role (admin, coordinator, operator, agent).
 */
export const PrincipalType = z.enum(["user", "agent", "group"]);
export type PrincipalType = z.infer<typeof PrincipalType>;

/**
 * An expiry as the clients send it: ISO 8601; Python's `datetime.isoformat()` of a naive datetime
 * has no offset, read as UTC (docs/compatibility.md).
 */
export const ExpiresAt = z
  .string()
  .datetime({ offset: true, local: true })
  .transform((value) => (/(?:[zZ]|[+-]\d{2}:?\d{2})$/.test(value) ? value : `${value}Z`))
  .refine((value) => Number.isFinite(new Date(value).getTime()), "must be a valid time")
  .openapi({ description: "ISO 8601; without an offset it is read as UTC" });

const Reason = z.string().max(2000);

export const AclEntry = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    principal_id: z.string(),
    principal_type: PrincipalType,
    permission: IntentPermission,
    granted_by: z.string(),
    granted_at: Timestamp,
    expires_at: Timestamp.nullable(),
    reason: z.string().nullable(),
  })
  .passthrough()
  .openapi("AclEntry");
export type AclEntry = z.infer<typeof AclEntry>;

export const IntentAcl = z
  .object({
    intent_id: Uuid,
    default_policy: AccessPolicy,
    default_permission: IntentPermission.openapi({ description: "what an open policy gives principals without an entry" }),
    owner: z.string().nullable().openapi({ description: "the principal (API key) that created the ACL; it holds admin. null: the intent has no ACL" }),
    entries: z.array(AclEntry),
    version: z.number().int().nonnegative().openapi({ description: "bumped by every change of the ACL; 0: the intent has no ACL" }),
  })
  .passthrough()
  .openapi("IntentAcl");
export type IntentAcl = z.infer<typeof IntentAcl>;

export const MAX_ACL_ENTRIES = 500;

/** An entry as PUT /acl carries it (the client's set_acl: principal_id, principal_type, permission). */
export const AclEntryInput = z
  .object({
    principal_id: ActorId,
    principal_type: PrincipalType.default("agent"),
    permission: IntentPermission.default("read"),
    reason: Reason.nullable().optional(),
    expires_at: ExpiresAt.nullable().optional(),
  })
  .strict()
  .openapi("AclEntryInput");
export type AclEntryInput = z.infer<typeof AclEntryInput>;

/**
 * An entry of PUT /acl. It also takes what GET answered for an entry (the client's
 * `ACLEntry.to_dict()`: id, granted_by, granted_at), so a list read, edited and written back is
 * accepted; the server keeps its own values of those.
 */
export const SetAclEntry = AclEntryInput.extend({
  id: z.string().max(100).nullable().optional().openapi({ description: "ignored: entries are matched by principal" }),
  granted_by: z.string().max(200).nullable().optional().openapi({ description: "ignored: the server records who set it" }),
  granted_at: z.string().max(100).nullable().optional().openapi({ description: "ignored: kept for an unchanged entry, else now" }),
})
  .strict()
  .openapi("SetAclEntry");

/** PUT /intents/{id}/acl: replaces the default policy and every entry. */
export const SetAclBody = z
  .object({
    default_policy: AccessPolicy.default("open"),
    default_permission: IntentPermission.default("read").openapi({ description: "what an open policy gives principals without an entry (RFC-0011 `default`); default read" }),
    entries: z.array(SetAclEntry).max(MAX_ACL_ENTRIES).default([]),
  })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.entries.forEach((entry, i) => {
      const key = `${entry.principal_type}:${entry.principal_id}`;
      if (seen.has(key)) ctx.addIssue({ code: "custom", path: ["entries", i], message: `${entry.principal_type} ${entry.principal_id} has more than one entry` });
      seen.add(key);
    });
  })
  .openapi("SetAcl");
export type SetAclBody = z.infer<typeof SetAclBody>;

/** POST /intents/{id}/acl/entries (the client's grant_access). */
export const GrantAccessBody = AclEntryInput.openapi("GrantAccess");
export type GrantAccessBody = z.infer<typeof GrantAccessBody>;

/**
 * The official MCP server's spelling (RFC-0011's `permissions` block, docs/compatibility.md): a
 * string (`open`, `restricted`, `private`), a list of agent ids (each gets write, nobody else has
 * access), or an object: the RFC's `policy`, `default`, `allow[{agent, level, expires}]`, and
 * `context` (only `auto`), or this server's ACL fields (`default_policy`, `default_permission`,
 * `entries`). `restricted` and `private` are a closed policy: only the allow list and the owner.
 * `delegate` is refused (delegation is not served).
 */
export const PermissionsPolicy = z.enum(["open", "restricted", "private", "closed"]);
const AllowEntry = z
  .object({
    agent: AgentId,
    level: IntentPermission.default("read"),
    expires: ExpiresAt.nullable().optional(),
  })
  .strict();
export const PermissionsObject = z
  .object({
    policy: PermissionsPolicy.optional(),
    default: IntentPermission.optional().openapi({ description: "what an open policy gives agents without an entry; default read" }),
    allow: z.array(AllowEntry).max(MAX_ACL_ENTRIES).optional(),
    context: z.literal("auto").optional().openapi({ description: "only auto: no context is injected beyond what the agent may read" }),
    default_policy: AccessPolicy.optional(),
    default_permission: IntentPermission.optional(),
    entries: z.array(SetAclEntry).max(MAX_ACL_ENTRIES).optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.policy !== undefined && value.default_policy !== undefined) ctx.addIssue({ code: "custom", path: ["default_policy"], message: "give policy or default_policy, not both" });
    if (value.default !== undefined && value.default_permission !== undefined) ctx.addIssue({ code: "custom", path: ["default_permission"], message: "give default or default_permission, not both" });
    if (value.allow !== undefined && value.entries !== undefined) ctx.addIssue({ code: "custom", path: ["entries"], message: "give allow or entries, not both" });
  });
export const Permissions = z.union([PermissionsPolicy, z.array(AgentId).max(MAX_ACL_ENTRIES), PermissionsObject]).openapi("Permissions");
export type Permissions = z.infer<typeof Permissions>;

/** PUT /intents/{id}/permissions (the MCP server's openintent_set_permissions). */
export const SetPermissionsBody = z
  .object({ permissions: Permissions })
  .strict()
  .superRefine((body, ctx) => {
    const result = SetAclBody.safeParse(permissionsToAcl(body.permissions));
    if (!result.success) for (const issue of result.error.issues) ctx.addIssue({ code: "custom", path: ["permissions", ...issue.path], message: issue.message });
  })
  .openapi("SetPermissions");
export type SetPermissionsBody = z.infer<typeof SetPermissionsBody>;

/** The ACL a `permissions` value stands for (the body of PUT /acl, before its defaults). */
export function permissionsToAcl(permissions: Permissions): z.input<typeof SetAclBody> {
  const closed = (policy: string) => (policy === "open" ? "open" : "closed") as AccessPolicy;
  if (typeof permissions === "string") return { default_policy: closed(permissions) };
  if (Array.isArray(permissions)) return { default_policy: "closed", entries: permissions.map((agent) => ({ principal_id: agent, principal_type: "agent", permission: "write" })) };
  return {
    default_policy: permissions.policy !== undefined ? closed(permissions.policy) : permissions.default_policy,
    default_permission: permissions.default ?? permissions.default_permission,
    entries:
      permissions.allow?.map((entry) => ({ principal_id: entry.agent, principal_type: "agent" as const, permission: entry.level, expires_at: entry.expires ?? null })) ?? permissions.entries,
  };
}

/**
 * POST /intents/{id}/permissions/grants (the MCP server's openintent_grant_access): an entry for
 * an agent. `scopes` may only be `["*"]`, the whole intent (an entry cannot be narrowed to parts
 * of it; a narrower grant is refused rather than made wider). `granted_by` is a label: the
 * server records the caller.
 */
export const GrantPermissionBody = z
  .object({
    agent_id: AgentId,
    level: IntentPermission,
    scopes: z.array(z.literal("*")).min(1).max(1).optional().openapi({ description: 'only ["*"]: the whole intent' }),
    granted_by: z.string().max(200).nullable().optional().openapi({ description: "ignored: the server records who granted it" }),
    expires_at: ExpiresAt.nullable().optional(),
    reason: Reason.nullable().optional(),
  })
  .strict()
  .openapi("GrantPermission");
export type GrantPermissionBody = z.infer<typeof GrantPermissionBody>;

export const AccessRequestStatus = z.enum(["pending", "approved", "denied"]);

export const AccessRequest = z
  .object({
    id: Uuid,
    intent_id: Uuid,
    principal_id: z.string(),
    principal_type: PrincipalType,
    requested_permission: IntentPermission,
    reason: z.string(),
    status: AccessRequestStatus,
    capabilities: z.array(z.string()),
    requested_by: z.string().openapi({ description: "the principal (API key) that sent the request" }),
    decided_by: z.string().nullable(),
    decided_at: Timestamp.nullable(),
    decision_reason: z.string().nullable(),
    entry_id: Uuid.nullable().openapi({ description: "the ACL entry an approval granted" }),
    created_at: Timestamp,
  })
  .passthrough()
  .openapi("AccessRequest");
export type AccessRequest = z.infer<typeof AccessRequest>;

/** POST /intents/{id}/access-requests (the client's request_access). */
export const CreateAccessRequestBody = z
  .object({
    principal_id: ActorId,
    principal_type: PrincipalType.default("agent"),
    requested_permission: IntentPermission.default("write"),
    reason: Reason.default(""),
    capabilities: z.array(z.string().min(1).max(200)).max(100).default([]),
  })
  .strict()
  .openapi("CreateAccessRequest");
export type CreateAccessRequestBody = z.infer<typeof CreateAccessRequestBody>;

/** approve / deny (the client sends decided_by = its agent id; permission and expires_at approve only). */
export const DecideAccessRequestBody = z
  .object({
    decided_by: ActorId.nullable().optional(),
    permission: IntentPermission.nullable().optional(),
    expires_at: ExpiresAt.nullable().optional(),
    reason: Reason.nullable().optional(),
  })
  .strict()
  .openapi("DecideAccessRequest");
export type DecideAccessRequestBody = z.infer<typeof DecideAccessRequestBody>;

export const ListAccessRequestsQuery = z.object({
  status: AccessRequestStatus.optional().openapi({ description: "only requests in this status" }),
});

export const MAX_ACCESS_REQUESTS_LISTED = 500;

export const AccessRequestList = z
  .object({ access_requests: z.array(AccessRequest), has_more: z.boolean() })
  .passthrough()
  .openapi("AccessRequestList");

export const AccessRevoked = z.object({ revoked: z.literal(true), entry_id: Uuid }).passthrough();

/** One access check another service asks: may this caller do what needs `permission` on the intent? */
export const IntentAccessCheck = z.object({ intent_id: Uuid, permission: IntentPermission, caller: Caller });
export type IntentAccessCheck = z.infer<typeof IntentAccessCheck>;
export const ACCESS_CHECKS_PER_REQUEST = 256;

export const AccessAllowed = z.object({ allowed: z.literal(true), permission: IntentPermission.openapi({ description: "the highest permission the caller holds" }) });
export const AccessVerdicts = z.object({
  results: z.array(
    z.union([
      AccessAllowed,
      z.object({ error: z.object({ code: z.string(), status: z.number().int(), message: z.string(), details: z.record(z.string(), z.unknown()).optional(), extra: z.record(z.string(), z.unknown()).optional() }) }),
    ]),
  ),
});
export type AccessVerdicts = z.infer<typeof AccessVerdicts>;

const EntryRef = IntentRef.extend({ entry_id: Uuid });
const RequestRef = IntentRef.extend({ request_id: Uuid });

/** The ACL commands, served by the intents service, which keeps the ACL beside the intent's row. */
export const aclCommands = {
  get: command("intents", "acl.get", IntentRef, IntentAcl, ["INTENT_NOT_FOUND"]),
  set: command("intents", "acl.set", IntentRef.extend({ body: SetAclBody }), IntentAcl, ["INTENT_NOT_FOUND"]),
  grant: command("intents", "acl.grant", IntentRef.extend({ body: GrantAccessBody }), AclEntry, ["ACL_FULL", "INTENT_NOT_FOUND"]),
  /** The MCP server's PUT /permissions: an ACL replaced, If-Match (optional) against the ACL's version. */
  setPermissions: command("intents", "acl.set_permissions", IntentRef.merge(IfMatch).extend({ body: SetPermissionsBody }), IntentAcl, ["INTENT_NOT_FOUND", "VERSION_MISMATCH"]),
  /** The MCP server's POST /permissions/grants: an agent's entry. */
  grantPermission: command("intents", "acl.grant_permission", IntentRef.extend({ body: GrantPermissionBody }), AclEntry, ["ACL_FULL", "INTENT_NOT_FOUND"]),
  revoke: command("intents", "acl.revoke", EntryRef, AccessRevoked, ["ACL_ENTRY_NOT_FOUND", "INTENT_NOT_FOUND"]),
  createRequest: command("intents", "access_requests.create", IntentRef.extend({ body: CreateAccessRequestBody }), AccessRequest, ["ACCESS_REQUESTS_FULL", "FORBIDDEN", "INTENT_NOT_FOUND"]),
  listRequests: command("intents", "access_requests.list", IntentRef.extend({ query: ListAccessRequestsQuery }), AccessRequestList, ["INTENT_NOT_FOUND"]),
  approveRequest: command("intents", "access_requests.approve", RequestRef.extend({ body: DecideAccessRequestBody }), AccessRequest, [
    "ACCESS_REQUEST_DECIDED",
    "ACCESS_REQUEST_NOT_FOUND",
    "ACL_FULL",
    "AGENT_MISMATCH",
    "INTENT_NOT_FOUND",
  ]),
  denyRequest: command("intents", "access_requests.deny", RequestRef.extend({ body: DecideAccessRequestBody }), AccessRequest, ["ACCESS_REQUEST_DECIDED", "ACCESS_REQUEST_NOT_FOUND", "AGENT_MISMATCH", "INTENT_NOT_FOUND"]),
  /**
   * Asked by other services (channels, memory, governance) before they touch something that
   * belongs to an intent: {allowed, permission} when the caller holds `permission`, else 403
   * INTENT_ACCESS_DENIED. Read when the request is served, with no cache anywhere, so a
   * revocation that has answered binds every later check on every replica.
   */
  check: command("intents", "acl.check", IntentRef.extend({ permission: IntentPermission }), AccessAllowed, ["INTENT_ACCESS_DENIED", "INTENT_NOT_FOUND"]),
  /** Many checks in one request, each with its own caller (libs/service IntentAccessChecks): {results} in the order asked. */
  checkMany: command("intents", "acl.check_many", z.object({ checks: z.array(IntentAccessCheck).min(1).max(ACCESS_CHECKS_PER_REQUEST) }), AccessVerdicts),
} as const;
