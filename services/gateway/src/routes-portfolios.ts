import type { Request } from "express";
import { portfoliosCommands as p } from "@intentmesh/contracts";
import type { Route } from "./routes";
import { id, ifMatch } from "./route-params";

const portfolioId = (req: Request) => String(req.params.portfolioId);

/** Portfolios (spec 2.5, designed here: see README "Portfolios"). Their SSE stream is in app.ts. */
export const portfolioRoutes: Route[] = [
  { method: "post", path: "/portfolios", command: p.create, input: (req) => ({ body: req.body }), status: 201, etag: true, claimsIdentity: ["created_by"], summary: "Create a portfolio" },
  {
    method: "get",
    path: "/portfolios",
    command: p.list,
    input: (req) => ({ query: req.query }),
    summary: "List portfolios, newest first (filters status, created_by; cursor pagination)",
  },
  {
    method: "get",
    path: "/portfolios/:portfolioId",
    command: p.get,
    input: (req) => ({ portfolio_id: portfolioId(req) }),
    etag: true,
    summary: "Read a portfolio with its members and aggregate status",
  },
  {
    method: "patch",
    path: "/portfolios/:portfolioId",
    command: p.update,
    input: (req) => ({ portfolio_id: portfolioId(req), if_match: ifMatch(req), body: req.body }),
    etag: true,
    summary: "Change name, description, due_before or metadata (If-Match required)",
  },
  {
    method: "post",
    path: "/portfolios/:portfolioId/intents",
    command: p.addMember,
    input: (req) => ({ portfolio_id: portfolioId(req), if_match: ifMatch(req), body: req.body }),
    status: 201,
    etag: true,
    summary: "Add an intent to the portfolio",
  },
  {
    method: "delete",
    path: "/portfolios/:portfolioId/intents/:intentId",
    command: p.removeMember,
    input: (req) => ({ portfolio_id: portfolioId(req), if_match: ifMatch(req), intent_id: String(req.params.intentId) }),
    etag: true,
    summary: "Remove an intent from the portfolio",
  },
  {
    method: "get",
    path: "/portfolios/:portfolioId/events",
    command: p.listEvents,
    input: (req) => ({ portfolio_id: portfolioId(req), query: req.query }),
    summary: "Read the portfolio's event log, oldest first",
  },
  {
    method: "get",
    path: "/intents/:id/portfolios",
    command: p.ofIntent,
    input: (req) => ({ intent_id: id(req), query: req.query }),
    summary: "The portfolios an intent belongs to, in the order it joined them (paged: after, limit)",
  },
];
