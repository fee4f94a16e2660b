import { ALL_ROLES, HUMAN_ROLES, type ApiRoute } from "../api-route";
import { suspensionRequestCommands } from "../suspension";

/** Suspensions (spec 4.5): an intent waits for a human's answer; the contract is in ../suspension.ts. */
export const suspensionRoutes = [
  {
    operationId: "governanceSuspend",
    tag: "Governance",
    method: "post",
    path: "/intents/{intent_id}/suspend",
    command: suspensionRequestCommands.suspend,
    body: "body",
    ifMatch: "optional",
    status: 201,
    etag: true,
    access: { roles: ALL_ROLES },
    summary: "Suspend an active intent for operator input (SuspensionRecord, spec 2.9); the server times it out",
  },
  {
    operationId: "governanceRespond",
    tag: "Governance",
    method: "post",
    path: "/intents/{intent_id}/suspend/respond",
    command: suspensionRequestCommands.respond,
    body: "body",
    access: { roles: HUMAN_ROLES },
    summary: "Answer the active suspension (operators, coordinators, admins); the intent resumes",
  },
] as const satisfies readonly ApiRoute[];
