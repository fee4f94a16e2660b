import { ALL_ROLES, type ApiRoute } from "../api-route";
import { verifiableLogCommands } from "../verifiable-logs";

/**
 * RFC 0019 verifiable event logs, at the paths the Python client calls (CLIENTS.md section 7):
 * reading and verifying is for every role; creating a checkpoint and recording its anchor is
 * for administrators (the RFC's /admin routes).
 */
export const verifiableLogRoutes = [
  {
    operationId: "eventsVerify",
    tag: "Verifiable logs",
    method: "get",
    path: "/intents/{intent_id}/events/verify",
    command: verifiableLogCommands.verify,
    access: { roles: ALL_ROLES },
    summary: "Verify an intent's hash chain and its checkpoints; reports every break, the first one first",
  },
  {
    operationId: "checkpointsList",
    tag: "Verifiable logs",
    method: "get",
    path: "/checkpoints",
    command: verifiableLogCommands.listCheckpoints,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "List checkpoints (a bare array; filters intent_id, scope; after a checkpoint_id, limit)",
  },
  {
    operationId: "checkpointsGet",
    tag: "Verifiable logs",
    method: "get",
    path: "/checkpoints/{checkpoint_id}",
    command: verifiableLogCommands.getCheckpoint,
    access: { roles: ALL_ROLES },
    summary: "Read a checkpoint: its Merkle root, signature and anchor",
  },
  {
    operationId: "checkpointsProof",
    tag: "Verifiable logs",
    method: "get",
    path: "/checkpoints/{checkpoint_id}/proof/{event_id}",
    command: verifiableLogCommands.proof,
    access: { roles: ALL_ROLES },
    summary: "Merkle inclusion proof of an event in a checkpoint",
  },
  {
    operationId: "checkpointsConsistency",
    tag: "Verifiable logs",
    method: "get",
    path: "/verify/consistency",
    command: verifiableLogCommands.consistency,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "Whether a later checkpoint extends an earlier one of the same log without gaps",
  },
  {
    operationId: "checkpointsCreate",
    tag: "Verifiable logs",
    method: "post",
    path: "/admin/checkpoints",
    command: verifiableLogCommands.createCheckpoint,
    body: "body",
    status: 201,
    access: { roles: ["admin"] },
    summary: "Checkpoint an intent's events since its last checkpoint now (admin)",
  },
  {
    operationId: "checkpointsAnchor",
    tag: "Verifiable logs",
    method: "post",
    path: "/admin/checkpoints/{checkpoint_id}/anchor",
    command: verifiableLogCommands.anchor,
    body: "body",
    access: { roles: ["admin"] },
    summary: "Record the external timestamp anchor of a checkpoint, once (admin)",
  },
] as const satisfies readonly ApiRoute[];
