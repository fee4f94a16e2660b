import { governanceCommands as g, governancePolicyCommands as policy, SuspensionRequest } from "@intentmesh/contracts";
import type { Request } from "express";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

const approval = (req: Request) => ({ intent_id: String(req.params.id), approval_id: String(req.params.approvalId) });

/** Suspension, approvals and engagement decisions (spec 4.5, 4.6): the governance service. */
export const governanceRoutes: Route[] = [
  {
    method: "put",
    path: "/intents/:id/governance",
    command: policy.set,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Set the governance policy (spec 2.11; If-Match required); answers the intent at its new version",
  },
  { method: "get", path: "/intents/:id/governance", command: policy.get, input: (req) => ({ intent_id: id(req) }), summary: "The policy and the effective policy (defaults filled in)" },
  {
    method: "delete",
    path: "/intents/:id/governance",
    command: policy.remove,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req) }),
    etag: true,
    summary: "Remove the governance policy (If-Match required)",
  },
  {
    method: "post",
    path: "/intents/:id/suspend",
    command: g.suspend,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    etag: true,
    documentedBody: SuspensionRequest,
    summary: "Suspend an active intent for operator input (SuspensionRecord, spec 2.9); the server times it out",
  },
  {
    method: "post",
    path: "/intents/:id/suspend/respond",
    command: g.respond,
    input: (req) => ({ intent_id: id(req), body: req.body }),
    summary: "Answer the active suspension (operators, coordinators, admins); the intent resumes",
  },
  {
    method: "post",
    path: "/intents/:id/approvals",
    command: g.createApproval,
    input: (req) => ({ intent_id: id(req), body: req.body }),
    status: 201,
    summary: "Request an approval (pending until approved or denied)",
  },
  { method: "get", path: "/intents/:id/approvals", command: g.listApprovals, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "List the intent's approvals, oldest first" },
  { method: "get", path: "/intents/:id/approvals/:approvalId", command: g.getApproval, input: (req) => approval(req), summary: "Read an approval" },
  {
    method: "post",
    path: "/intents/:id/approvals/:approvalId/approve",
    command: g.approve,
    input: (req) => ({ ...approval(req), body: req.body }),
    summary: "Approve a pending approval (operators, coordinators, admins; never its requester)",
  },
  {
    method: "post",
    path: "/intents/:id/approvals/:approvalId/deny",
    command: g.deny,
    input: (req) => ({ ...approval(req), body: req.body }),
    summary: "Deny a pending approval (optional reason)",
  },
  {
    method: "post",
    path: "/intents/:id/engagement",
    command: g.decideEngagement,
    input: (req) => ({ intent_id: id(req), body: req.body }),
    summary: "Turn engagement signals into an engagement decision (spec 4.5), logged as engagement.decision",
  },
];
