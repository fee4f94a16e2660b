import { ALL_ROLES, type ApiRoute } from "../api-route";
import { attachmentCommands } from "../attachments";

/** Attachments (4.3). */
export const attachmentsRoutes = [
  {
    operationId: "attachmentsCreate",
    tag: "Attachments",
    method: "post",
    path: "/intents/{intent_id}/attachments",
    command: attachmentCommands.create,
    body: "body",
    ifMatch: "optional",
    status: 201,
    access: { roles: ALL_ROLES },
    summary: "Attach a reference to a file stored elsewhere (storage_url is never fetched)",
  },
  {
    operationId: "attachmentsList",
    tag: "Attachments",
    method: "get",
    path: "/intents/{intent_id}/attachments",
    command: attachmentCommands.list,
    query: "query",
    access: { roles: ALL_ROLES },
    summary: "List attachments, oldest first, in pages",
  },
  {
    operationId: "attachmentsDelete",
    tag: "Attachments",
    method: "delete",
    path: "/intents/{intent_id}/attachments/{attachment_id}",
    command: attachmentCommands.delete,
    ifMatch: "optional",
    access: { roles: ALL_ROLES },
    summary: "Delete an attachment (uploader, coordinator or admin); answers the removed attachment",
  },
] as const satisfies readonly ApiRoute[];
