import { bigint, index, integer, jsonb, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { intentsSchema } from "./schema";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const portfolios = intentsSchema.table(
  "portfolios",
  {
    id: uuid("id").primaryKey(),
    name: text("name").notNull(),
    description: text("description"),
    createdBy: text("created_by").notNull(),
    /** The aggregate of the members' statuses, kept in step by every write that can change it. */
    status: text("status").notNull(),
    dueBefore: ts("due_before"),
    metadata: jsonb("metadata").$type<Record<string, unknown>>().notNull(),
    version: integer("version").notNull(),
    /** Last sequence number used in this portfolio's event log; bumping it locks the row, so sequences have no gaps. */
    eventSeq: bigint("event_seq", { mode: "number" }).notNull().default(0),
    createdAt: ts("created_at").notNull(),
    updatedAt: ts("updated_at").notNull(),
  },
  (t) => [
    index("portfolios_created_idx").on(t.createdAt.desc(), t.id.desc()),
    index("portfolios_created_by_idx").on(t.createdBy, t.createdAt.desc()),
    index("portfolios_status_idx").on(t.status, t.createdAt.desc()),
  ],
);

export const portfolioMembers = intentsSchema.table(
  "portfolio_members",
  {
    portfolioId: uuid("portfolio_id").notNull(),
    intentId: uuid("intent_id").notNull(),
    role: text("role"),
    addedBy: text("added_by").notNull(),
    addedAt: ts("added_at").notNull(),
    /** The member's status as of `intentSequence`: read when it joined, then from status_changed events. */
    intentStatus: text("intent_status").notNull(),
    /** Sequence of the intent event `intentStatus` reflects; older or repeated events change nothing. */
    intentSequence: bigint("intent_sequence", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.portfolioId, t.intentId] }), index("portfolio_members_intent_idx").on(t.intentId)],
);

export const portfolioEvents = intentsSchema.table(
  "portfolio_events",
  {
    id: uuid("id").primaryKey(),
    portfolioId: uuid("portfolio_id").notNull(),
    sequence: bigint("sequence", { mode: "number" }).notNull(),
    eventType: text("event_type").notNull(),
    actor: text("actor").notNull(),
    payload: jsonb("payload").$type<Record<string, unknown>>().notNull(),
    createdAt: ts("created_at").notNull(),
    /** The event exactly as the API and the bus carry it (events are immutable). */
    wire: text("wire").notNull(),
  },
  (t) => [
    uniqueIndex("portfolio_events_sequence_idx").on(t.portfolioId, t.sequence),
    index("portfolio_events_type_idx").on(t.portfolioId, t.eventType, t.sequence),
  ],
);
