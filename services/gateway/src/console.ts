import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import express, { type Express, type Request, type Response } from "express";
import { ALL_ROLES, apiRoutes, appError, errors, routeAdmits } from "@intentmesh/contracts";
import type { ApiKeys } from "./api-keys";

/**
 * The operator console (docs/console.md): the static files of packages/console, built by
 * `pnpm install` (the root postinstall) into packages/console/dist, served at /console without a
 * key; every API call the console makes carries the operator's key like any other client's.
 * Beside them one small document the API has no operation for: GET /console/session answers who
 * the presented key is (principal, roles) and the operations its roles admit (the route
 * catalogue's own rule, routeAdmits), so that the console shows only the actions the key may take. From services/gateway/src and services/gateway/dist alike the files
 * are three folders up (GatewayOptions.consoleDir names another place).
 */
export const defaultConsoleDir = (): string => path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../packages/console/dist");

/** What the console's page may load: its own files and the API of the same origin, nothing else. */
const CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function mountConsole(app: Express, keys: ApiKeys, dir: string = defaultConsoleDir()): void {
  const index = path.join(dir, "index.html");
  app.get("/console/session", (req: Request, res: Response) => {
    const identity = keys.identify(req.get("x-api-key"));
    if (!identity) throw errors.unauthorized(req.get("x-api-key") ? "the X-API-Key is not valid" : "the X-API-Key header is required");
    if (!identity.roles.some((role) => ALL_ROLES.includes(role))) {
      throw errors.forbidden("the console is open to admin, coordinator, operator and agent keys only", { required_roles: ALL_ROLES, roles: identity.roles });
    }
    const operations = apiRoutes.filter((route) => routeAdmits(route, identity.roles)).map((route) => route.operationId);
    res.set("Cache-Control", "no-store").json({ principal: identity.principal, roles: identity.roles, operations });
  });
  const files = express.static(dir, {
    index: false,
    fallthrough: true,
    setHeaders: (res, file) => {
      // Vite names every asset by its content hash: it never changes under its name.
      res.set("Cache-Control", file.includes(`${path.sep}assets${path.sep}`) ? "public, max-age=31536000, immutable" : "no-cache");
    },
  });
  app.use("/console", (req, res, next) => {
    res.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    res.set("Referrer-Policy", "no-referrer");
    res.set("X-Content-Type-Options", "nosniff");
    files(req, res, next);
  });
  // The page itself at /console/ (/console redirects there, so that its relative URLs resolve);
  // the console routes by the URL's fragment, so no other path is a page.
  app.get("/console", (req, res) => {
    if (!req.originalUrl.split("?")[0]!.endsWith("/")) return void res.redirect(301, "/console/");
    if (!fs.existsSync(index)) {
      throw appError("SERVICE_UNAVAILABLE", `the console is not built: run \`pnpm install\` (or \`pnpm --filter @intentmesh/console build\`), which writes ${path.relative(process.cwd(), dir) || dir}`);
    }
    res.set("Cache-Control", "no-cache").sendFile(index);
  });
}
