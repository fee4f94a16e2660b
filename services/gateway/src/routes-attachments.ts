import { attachmentCommands as a } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

/** Attachments (spec 4.3): references to bytes stored elsewhere. */
export const attachmentRoutes: Route[] = [
  {
    method: "post",
    path: "/intents/:id/attachments",
    command: a.create,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    summary: "Attach a reference to a file stored elsewhere (storage_url is never fetched)",
  },
  { method: "get", path: "/intents/:id/attachments", command: a.list, input: (req) => ({ intent_id: id(req), query: req.query }), summary: "List attachments, oldest first, in pages" },
  {
    method: "delete",
    path: "/intents/:id/attachments/:attachmentId",
    command: a.delete,
    input: (req) => ({ intent_id: id(req), if_match: ifMatch(req), attachment_id: String(req.params.attachmentId) }),
    summary: "Delete an attachment (uploader, coordinator or admin); answers the removed attachment",
  },
];
