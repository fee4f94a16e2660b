import type { IncomingMessage, ServerResponse } from "node:http";
import type express from "express";
import type { NextFunction, Request, Response } from "express";
import type { RouteTable } from "./route-table";

/** A middleware of the chain express runs in front of a catalogue route. */
export type Step = express.RequestHandler;
export type ErrorStep = (error: unknown, req: Request, res: Response, next: NextFunction) => unknown;

/** A catalogue route as the direct path serves it. */
export interface DirectRoute {
  /** express's Route object of the same route: req.route while its parameters are checked, as express sets it. */
  expressRoute: unknown;
  /** The route's path-parameter checks (what express runs as router.param callbacks), in path order. */
  checkParams(req: Request): void;
  handler: Step;
}

/**
 * Serves the requests the route table matches without express's router (issue 32), running what
 * express runs for them, in its order: `prefixSteps` (app-level: request id, CORS, span, access
 * log), `apiSteps` (the API router's: key, body, query checks), the route's parameter checks and
 * handler; an error goes to `onError`, the app's error handler. Returns false, having touched
 * nothing, for a request the table does not match: express serves it as always.
 */
export function directDispatch<T extends DirectRoute>(app: express.Express, table: RouteTable<T>, steps: readonly Step[], onError: ErrorStep) {
  return (incoming: IncomingMessage, outgoing: ServerResponse): boolean => {
    const hit = table(incoming.method!, incoming.url!);
    if (!hit) return false;
    const req = incoming as Request;
    const res = outgoing as Response;
    // What express's app.handle does (express 5, lib/application.js): the two linked, express's
    // request and response prototypes (req.get, req.query with the app's query parser, res.json,
    // the app's settings), res.locals.
    req.res = res;
    res.req = req;
    // A server made with expressServerClasses already made them so: then these change nothing.
    if (Object.getPrototypeOf(req) !== app.request) Object.setPrototypeOf(req, app.request);
    if (Object.getPrototypeOf(res) !== app.response) Object.setPrototypeOf(res, app.response);
    if (!res.locals) res.locals = Object.create(null);
    // What the routers set on the way. req.url stays whole: express trims the mount paths off it
    // while a layer runs, and none of these steps reads it (they read originalUrl and headers).
    req.originalUrl = req.url;
    req.baseUrl = hit.prefix;
    req.params = {};

    let index = 0;
    const fail = (error: unknown) => {
      try {
        onError(error, req, res, unanswered);
      } catch {
        unanswered();
      }
    };
    // express's final handler, for an error handler that fails itself: a bare 500.
    const unanswered = () => {
      if (res.headersSent) res.destroy();
      else {
        res.statusCode = 500;
        res.end();
      }
    };
    const call = (step: Step) => {
      try {
        const returned = step(req, res, next) as Promise<unknown> | undefined;
        // As express 5 does: a handler's rejected promise is its error.
        if (returned && typeof returned.then === "function") returned.then(undefined, (error: unknown) => next(error || new Error("Rejected promise")));
      } catch (error) {
        next(error);
      }
    };
    const next: NextFunction = (error?: unknown) => {
      if (error) return fail(error);
      if (index < steps.length) return call(steps[index++]!);
      if (index++ > steps.length) return; // the route's handler called next(): nothing of the catalogue does
      const route = hit.value;
      // The route's router: req.route and the route's own params and base, then its parameter checks.
      (req as { route?: unknown }).route = route.expressRoute;
      req.baseUrl = hit.base;
      req.params = hit.params;
      try {
        route.checkParams(req);
      } catch (failure) {
        return fail(failure);
      }
      call(route.handler);
    };
    next();
    return true;
  };
}
