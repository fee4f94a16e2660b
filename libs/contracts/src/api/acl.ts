import { ALL_ROLES, type ApiRoute } from "../api-route";
import { aclCommands } from "../acl";

/**
 * Access control (RFC-0011), at the paths the official client calls. Every key role may call
 * them: what a caller may do on one intent is the intent's ACL's to say (libs/contracts
 * intent-access.ts), and an intent without one is open to all, as before.
 */
export const aclRoutes = [
  {
    operationId: "aclGet",
    tag: "Access control",
    method: "get",
    path: "/intents/{intent_id}/acl",
    command: aclCommands.get,
    access: { roles: ALL_ROLES },
    summary: "The intent's access-control list: default policy, owner, live entries (admin of the intent)",
  },
  {
    operationId: "aclSet",
    tag: "Access control",
    method: "put",
    path: "/intents/{intent_id}/acl",
    command: aclCommands.set,
    body: "body",
    access: { roles: ALL_ROLES },
    summary: "Replace the default policy and every entry; the first ACL of an intent makes the caller's key its owner",
  },
  {
    operationId: "aclGrant",
    tag: "Access control",
    method: "post",
    path: "/intents/{intent_id}/acl/entries",
    command: aclCommands.grant,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES },
    summary: "Grant a principal a permission, optionally until expires_at (replaces its entry)",
  },
  {
    operationId: "aclRevoke",
    tag: "Access control",
    method: "delete",
    path: "/intents/{intent_id}/acl/entries/{entry_id}",
    command: aclCommands.revoke,
    status: 204,
    access: { roles: ALL_ROLES },
    summary: "Revoke an entry; no request that starts after this answer is decided by it",
  },
  {
    operationId: "accessRequestCreate",
    tag: "Access control",
    method: "post",
    path: "/intents/{intent_id}/access-requests",
    command: aclCommands.createRequest,
    body: "body",
    status: 201,
    access: { roles: ALL_ROLES },
    summary: "Ask for access (no access needed; the principal named must be the caller)",
  },
  {
    operationId: "accessRequestList",
    tag: "Access control",
    method: "get",
    path: "/intents/{intent_id}/access-requests",
    command: aclCommands.listRequests,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "Access requests, oldest first: all of them for an admin of the intent, one's own for anyone else",
  },
  {
    operationId: "accessRequestApprove",
    tag: "Access control",
    method: "post",
    path: "/intents/{intent_id}/access-requests/{request_id}/approve",
    command: aclCommands.approveRequest,
    body: "body",
    access: { roles: ALL_ROLES },
    summary: "Approve a pending request: the principal gets an entry (permission and expiry as given, else as asked)",
  },
  {
    operationId: "accessRequestDeny",
    tag: "Access control",
    method: "post",
    path: "/intents/{intent_id}/access-requests/{request_id}/deny",
    command: aclCommands.denyRequest,
    body: "body",
    access: { roles: ALL_ROLES },
    summary: "Deny a pending request",
  },
] as const satisfies readonly ApiRoute[];
