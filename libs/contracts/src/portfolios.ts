import { z } from "./zod";
import { ActorId, JsonObject, Timestamp, Uuid, boundedJsonObject, pageLimit } from "./common";
import { INTENT_STATUSES, IntentStatus, ListEventsQuery } from "./intents";
import { command, IfMatch, IntentRef } from "./command";

/**
 * Portfolios (spec 2.5: fields not shown, so designed here; see README "Portfolios"): a named
 * group of intents with an aggregate status derived from its members and an optional
 * `due_before` deadline that suspensions of its members must not outlast (spec 8).
 */

/** The aggregate takes the intent status vocabulary (rule in services/intents/src/portfolios/portfolio-status.ts). */
export const PortfolioStatus = IntentStatus;
export type PortfolioStatus = IntentStatus;

/** A member as the portfolio last saw it: `status` follows the intent's status_changed events. */
export const PortfolioMember = z
  .object({
    intent_id: Uuid,
    role: z.string().nullable(),
    status: IntentStatus,
    added_by: z.string(),
    added_at: Timestamp,
  })
  .openapi("PortfolioMember");
export type PortfolioMember = z.infer<typeof PortfolioMember>;

export const StatusCounts = z.object(Object.fromEntries(INTENT_STATUSES.map((s) => [s, z.number().int()])) as Record<IntentStatus, z.ZodNumber>);
export type StatusCounts = Record<IntentStatus, number>;

export const Portfolio = z
  .object({
    id: Uuid,
    name: z.string(),
    description: z.string().nullable(),
    created_by: z.string(),
    status: PortfolioStatus.openapi({ description: "derived from the members' statuses; never set by hand" }),
    due_before: Timestamp.nullable().openapi({ description: "deadline: no member's suspension may run past it" }),
    metadata: JsonObject,
    member_count: z.number().int(),
    status_counts: StatusCounts.openapi({ description: "members per status" }),
    version: z.number().int().openapi({ description: "counts changes to the portfolio: fields and membership" }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Portfolio");
export type Portfolio = z.infer<typeof Portfolio>;

export const PortfolioDetail = Portfolio.extend({ members: z.array(PortfolioMember) }).openapi("PortfolioDetail");
export type PortfolioDetail = z.infer<typeof PortfolioDetail>;

/** A member limit keeps GET /portfolios/{id}, which lists every member, bounded. */
export const MAX_PORTFOLIO_MEMBERS = 1000;

const DueBefore = z.iso.datetime({ offset: true, message: "must be an ISO 8601 timestamp" }).nullable();

export const CreatePortfolioBody = z
  .object({
    name: z.string().trim().min(1, "name must not be empty").max(500),
    description: z.string().max(20_000).nullable().optional(),
    created_by: ActorId.optional(),
    due_before: DueBefore.optional(),
    metadata: boundedJsonObject().default({}),
  })
  .strict()
  .openapi("CreatePortfolio");
export type CreatePortfolioBody = z.infer<typeof CreatePortfolioBody>;

export const UpdatePortfolioBody = z
  .object({
    name: z.string().trim().min(1, "name must not be empty").max(500).optional(),
    description: z.string().max(20_000).nullable().optional(),
    due_before: DueBefore.optional(),
    metadata: boundedJsonObject().optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, "give at least one of name, description, due_before, metadata")
  .openapi("UpdatePortfolio");
export type UpdatePortfolioBody = z.infer<typeof UpdatePortfolioBody>;

export const AddMemberBody = z
  .object({ intent_id: Uuid, role: z.string().max(100).nullable().optional() })
  .strict()
  .openapi("AddPortfolioMember");
export type AddMemberBody = z.infer<typeof AddMemberBody>;

export const ListPortfoliosQuery = z.object({
  status: z
    .string()
    .optional()
    .transform((value) => (value ? value.split(",").map((s) => s.trim()).filter(Boolean) : undefined))
    .pipe(z.array(PortfolioStatus).optional()),
  created_by: z.string().optional(),
  after: z.string().optional().openapi({ description: "opaque cursor from next_cursor" }),
  limit: pageLimit(50, 200),
});
export type ListPortfoliosQuery = z.infer<typeof ListPortfoliosQuery>;

/** GET /intents/{id}/portfolios: the portfolios an intent belongs to, in the order it joined them. */
export const ListIntentPortfoliosQuery = z.object({
  after: z.string().optional().openapi({ description: "opaque cursor from next_cursor" }),
  limit: pageLimit(100, 1000),
});
export type ListIntentPortfoliosQuery = z.infer<typeof ListIntentPortfoliosQuery>;

export const PortfolioPage = z
  .object({ portfolios: z.array(Portfolio), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .openapi("PortfolioPage");

/** Same shape as an intent event with portfolio_id in place of intent_id, so SSE treats both alike. */
export const PortfolioEvent = z
  .object({
    id: Uuid,
    portfolio_id: Uuid,
    sequence: z.number().int().openapi({ description: "position in this portfolio's log, from 1, without gaps" }),
    event_type: z.string(),
    actor: z.string(),
    payload: JsonObject,
    created_at: Timestamp,
  })
  .openapi("PortfolioEvent");
export type PortfolioEvent = z.infer<typeof PortfolioEvent>;

export const PortfolioEventPage = z
  .object({ events: z.array(PortfolioEvent), next_cursor: z.string().nullable(), has_more: z.boolean() })
  .openapi("PortfolioEventPage");


export const portfolioEventSubject = (portfolioId: string, eventType: string) => `im.evt.portfolio.${portfolioId}.${eventType}`;
export const portfolioEventFilter = (portfolioId: string) => `im.evt.portfolio.${portfolioId}.>`;
export const portfolioEventMsgId = (portfolioId: string, sequence: number) => `portfolio:${portfolioId}:e${sequence}`;
export const PORTFOLIO_EVENT_SCHEMA = "im.portfolio-event/2";

const PortfolioRef = z.object({ portfolio_id: Uuid });

export const portfoliosCommands = {
  create: command("intents", "portfolios.create", z.object({ body: CreatePortfolioBody }), PortfolioDetail),
  get: command("intents", "portfolios.get", PortfolioRef, PortfolioDetail, ["PORTFOLIO_NOT_FOUND"]),
  list: command("intents", "portfolios.list", z.object({ query: ListPortfoliosQuery }), PortfolioPage),
  update: command("intents", "portfolios.update", PortfolioRef.merge(IfMatch).extend({ body: UpdatePortfolioBody }), PortfolioDetail, ["PORTFOLIO_NOT_FOUND", "PRECONDITION_REQUIRED", "SUSPENSION_PAST_DUE_BEFORE", "VERSION_MISMATCH"]),
  addMember: command("intents", "portfolios.members.add", PortfolioRef.merge(IfMatch).extend({ body: AddMemberBody }), PortfolioDetail, ["INTENT_NOT_FOUND", "MEMBER_EXISTS", "PORTFOLIO_FULL", "PORTFOLIO_NOT_FOUND", "SUSPENSION_PAST_DUE_BEFORE", "VERSION_MISMATCH"]),
  removeMember: command("intents", "portfolios.members.remove", PortfolioRef.merge(IfMatch).extend({ intent_id: Uuid }), PortfolioDetail, ["INTENT_NOT_FOUND", "MEMBER_NOT_FOUND", "PORTFOLIO_NOT_FOUND"]),
  listEvents: command("intents", "portfolios.events.list", PortfolioRef.extend({ query: ListEventsQuery }), PortfolioEventPage, ["PORTFOLIO_NOT_FOUND"]),
  ofIntent: command("intents", "portfolios.of_intent", IntentRef.extend({ query: ListIntentPortfoliosQuery }), PortfolioPage, ["INTENT_NOT_FOUND"]),
} as const;

