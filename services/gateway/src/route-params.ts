import type { Request } from "express";
import { parseIfMatch } from "./http";

// What routes read from a request's path and headers, shared by routes.ts and every routes-*.ts
// (here, not in routes.ts, which imports those files).

/** The `:id` path parameter. */
export const id = (req: Request) => String(req.params.id);
/** The If-Match header as a version, or null when absent (a malformed one is a 400). */
export const ifMatch = (req: Request) => parseIfMatch(req.get("if-match"));
