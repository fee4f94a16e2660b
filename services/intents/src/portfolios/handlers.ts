import { appError, portfoliosCommands, type CommandResult, portfolioEvents } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { sql, type SQL } from "drizzle-orm";
import {
  decodeKeysetCursor,
  encodeKeysetCursor,
  fitPage,
  jsonBytes,
  errors,
  isoTimestamp,
  MAX_PORTFOLIO_MEMBERS,
  portfolioEventTypes,
  Uuid,
  type AddMemberBody,
  type Caller,
  type CreatePortfolioBody,
  type IntentStatus,
  type ListEventsQuery,
  type ListIntentPortfoliosQuery,
  type ListPortfoliosQuery,
  type Portfolio,
  type PortfolioDetail,
  type PortfolioMember,
  type UpdatePortfolioBody,
  sequenceCursor,
} from "@intentmesh/contracts";
import { RawJson, newEvent } from "@intentmesh/bus";
import { rowsOf, type Queryable, type Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { assertIntentExists } from "../kernel/event-log";
import type { NewEvent } from "../kernel/event-log";
import { appendToPortfolioLog } from "./event-log";
import { aggregateStatus, fullCounts } from "./portfolio-status";
import { assertDeadlineWithinDueBefore } from "../suspension/rules";

type PortfolioRow = {
  id: string;
  name: string;
  description: string | null;
  created_by: string;
  status: string;
  due_before: Date | string | null;
  metadata: Record<string, unknown>;
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
  counts: Record<string, number> | null;
  members?: { intent_id: string; role: string | null; status: string; added_by: string; added_at: string }[];
};

/** Members per status, counted by Postgres: the aggregate never loads the member rows. */
const COUNTS = sql`(select coalesce(json_object_agg(c.intent_status, c.n), '{}'::json)
   from (select intent_status, count(*)::int as n from intents.portfolio_members where portfolio_id = p.id group by intent_status) c) as counts`;
const MEMBERS = sql`(select coalesce(json_agg(json_build_object('intent_id', m.intent_id, 'role', m.role, 'status', m.intent_status,
     'added_by', m.added_by, 'added_at', m.added_at) order by m.added_at, m.intent_id), '[]'::json)
   from intents.portfolio_members m where m.portfolio_id = p.id) as members`;
const COLUMNS = sql`p.id, p.name, p.description, p.created_by, p.status, p.due_before, p.metadata, p.version, p.created_at, p.updated_at`;

function toPortfolio(row: PortfolioRow): Portfolio {
  const status_counts = fullCounts(row.counts ?? {});
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    created_by: row.created_by,
    status: row.status as IntentStatus,
    due_before: row.due_before === null ? null : isoTimestamp(row.due_before),
    metadata: row.metadata,
    member_count: Object.values(status_counts).reduce((a, b) => a + b, 0),
    status_counts,
    version: Number(row.version),
    created_at: isoTimestamp(row.created_at),
    updated_at: isoTimestamp(row.updated_at),
  };
}

function toDetail(row: PortfolioRow): PortfolioDetail {
  const members: PortfolioMember[] = (row.members ?? []).map((m) => ({
    intent_id: m.intent_id,
    role: m.role,
    status: m.status as IntentStatus,
    added_by: m.added_by,
    added_at: isoTimestamp(m.added_at),
  }));
  return { ...toPortfolio(row), members };
}

async function selectDetail(q: Queryable, portfolioId: string): Promise<PortfolioDetail | undefined> {
  const [row] = rowsOf<PortfolioRow>(await q.execute(sql`select ${COLUMNS}, ${COUNTS}, ${MEMBERS} from intents.portfolios p where p.id = ${portfolioId}`));
  return row ? toDetail(row) : undefined;
}

/** Members per status of one portfolio, as Postgres counts them inside the caller's transaction. */
export async function countMembers(tx: Queryable, portfolioId: string): Promise<Record<string, number>> {
  const rows = rowsOf<{ intent_status: string; n: number }>(
    await tx.execute(sql`select intent_status, count(*)::int as n from intents.portfolio_members where portfolio_id = ${portfolioId} group by intent_status`),
  );
  return Object.fromEntries(rows.map((r) => [r.intent_status, Number(r.n)]));
}

/** A due_before must lie ahead: a portfolio already past due would refuse every deadline. */
function dueBeforeDate(value: string | null | undefined, now: Date): Date | null | undefined {
  if (value === undefined || value === null) return value;
  const due = new Date(value);
  if (due.getTime() <= now.getTime()) {
    throw errors.validation(`due_before ${value} is not in the future`, [{ path: "due_before", message: "must be in the future", code: "custom" }]);
  }
  return due;
}

/** The deadline of the suspension an intent's state holds (null when it has none). */
export function deadlineOf(suspension: unknown): Date | null {
  const expires = (suspension as { expires_at?: unknown } | null)?.expires_at;
  return typeof expires === "string" ? new Date(expires) : null;
}

/** Locks the portfolio row for the transaction; 404 when absent, 409 when an If-Match was sent and is stale. */
async function lockPortfolio(tx: Tx, portfolioId: string, ifMatch: number | null) {
  const [row] = rowsOf<{ version: number; status: string; due_before: Date | string | null }>(
    await tx.execute(sql`select version, status, due_before from intents.portfolios where id = ${portfolioId} for update`),
  );
  if (!row) throw errors.notFound("portfolio", portfolioId);
  if (ifMatch !== null && row.version !== ifMatch) throw errors.versionMismatch("portfolio", portfolioId, row.version, ifMatch);
  return { version: Number(row.version), status: row.status as IntentStatus, dueBefore: row.due_before === null ? null : new Date(row.due_before) };
}

/** A portfolio.status_changed event when the aggregate moved. */
function aggregateEvent(from: IntentStatus, to: IntentStatus, actor: string, cause: Record<string, unknown>): NewEvent[] {
  return from === to ? [] : [newEvent(portfolioEvents.statusChanged, actor, { from, to, ...cause })];
}

/** POST /portfolios: an empty portfolio (aggregate draft) at version 1 and its portfolio.created event. */
export async function createPortfolio(ctx: IntentsContext, body: CreatePortfolioBody, caller: Caller): Promise<PortfolioDetail> {
  const now = ctx.clock.now();
  const dueBefore = dueBeforeDate(body.due_before, now) ?? null;
  const id = randomUUID();
  const status = aggregateStatus({});
  const detail = await ctx.db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into intents.portfolios (id, name, description, created_by, status, due_before, metadata, version, event_seq, created_at, updated_at)
      values (${id}, ${body.name}, ${body.description ?? null}, ${body.created_by ?? caller.actor}, ${status}, ${dueBefore},
              ${JSON.stringify(body.metadata)}::jsonb, 1, 0, ${now}, ${now})`);
    const created = (await selectDetail(tx, id))!;
    const { id: _id, members: _m, member_count: _c, status_counts: _s, created_at: _ca, updated_at: _ua, ...announced } = created;
    await appendToPortfolioLog(tx, id, [newEvent(portfolioEvents.created, caller.actor, announced)], now);
    return created;
  });
  ctx.published();
  return detail;
}

export async function getPortfolio(ctx: IntentsContext, portfolioId: string): Promise<PortfolioDetail> {
  const detail = await selectDetail(ctx.db, portfolioId);
  if (!detail) throw errors.notFound("portfolio", portfolioId);
  return detail;
}

/** GET /portfolios: newest first; filters status (the aggregate) and created_by; cursor on (created_at, id). */
export async function listPortfolios(ctx: IntentsContext, query: ListPortfoliosQuery) {
  const filters: SQL[] = [];
  if (query.status?.length) filters.push(sql`p.status in (${sql.join(query.status.map((s) => sql`${s}`), sql`, `)})`);
  if (query.created_by) filters.push(sql`p.created_by = ${query.created_by}`);
  if (query.after) {
    const cursor = decodeKeysetCursor(query.after);
    filters.push(sql`(p.created_at, p.id) < (${cursor.createdAt}, ${cursor.id}::uuid)`);
  }
  const where = filters.length ? sql`where ${sql.join(filters, sql` and `)}` : sql``;
  const rows = rowsOf<PortfolioRow>(
    await ctx.db.execute(sql`select ${COLUMNS}, ${COUNTS} from intents.portfolios p ${where} order by p.created_at desc, p.id desc limit ${query.limit + 1}`),
  );
  const { items: page, cut } = fitPage(rows.slice(0, query.limit).map((row) => ({ row, portfolio: toPortfolio(row) })), (p) => jsonBytes(p.portfolio));
  const last = page[page.length - 1]?.row;
  const hasMore = cut || rows.length > query.limit;
  return {
    portfolios: page.map((p) => p.portfolio),
    next_cursor: hasMore && last ? encodeKeysetCursor(new Date(last.created_at), last.id) : null,
    has_more: hasMore,
  };
}

/**
 * GET /intents/{id}/portfolios: the portfolios the intent belongs to, in the order it joined them,
 * a page at a time (an intent may join any number of portfolios; a page is cut by count and by
 * bytes like every list). Cursor on (added_at, portfolio id).
 */
export async function portfoliosOfIntent(ctx: IntentsContext, intentId: string, query: ListIntentPortfoliosQuery) {
  const after = query.after ? decodeKeysetCursor(query.after) : null;
  const rows = rowsOf<PortfolioRow & { added_at: string }>(
    await ctx.db.execute(sql`
      select ${COLUMNS}, ${COUNTS}, pm.added_at from intents.portfolios p
      join intents.portfolio_members pm on pm.portfolio_id = p.id and pm.intent_id = ${intentId}
      ${after ? sql`where (pm.added_at, p.id) > (${after.createdAt}, ${after.id}::uuid)` : sql``}
      order by pm.added_at, p.id limit ${query.limit + 1}`),
  );
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  const { items: page, cut } = fitPage(rows.slice(0, query.limit).map((row) => ({ row, portfolio: toPortfolio(row) })), (p) => jsonBytes(p.portfolio));
  const last = page[page.length - 1]?.row;
  const hasMore = cut || rows.length > query.limit;
  return {
    portfolios: page.map((p) => p.portfolio),
    next_cursor: hasMore && last ? encodeKeysetCursor(new Date(last.added_at), last.id) : null,
    has_more: hasMore,
  };
}

/**
 * PATCH /portfolios/{id}: name, description, due_before, metadata. If-Match required; version + 1;
 * portfolio.updated names the fields changed. A due_before earlier than the deadline of a
 * member's running suspension (or any due_before while a member is suspended without one) is 409.
 */
export async function updatePortfolio(ctx: IntentsContext, portfolioId: string, ifMatch: number | null, body: UpdatePortfolioBody, caller: Caller): Promise<PortfolioDetail> {
  if (ifMatch === null) throw errors.preconditionRequired("portfolio");
  const now = ctx.clock.now();
  const dueBefore = dueBeforeDate(body.due_before, now);
  const detail = await ctx.db.transaction(async (tx) => {
    const current = await lockPortfolio(tx, portfolioId, ifMatch);
    if (dueBefore) {
      // Suspensions begin under a share lock on this row (see suspension.ts), so none starts unseen meanwhile.
      const suspended = rowsOf<{ id: string; suspension: unknown }>(
        await tx.execute(sql`
          select i.id, i.state->'_suspension' as suspension from intents.intents i
          join intents.portfolio_members m on m.intent_id = i.id
          where m.portfolio_id = ${portfolioId} and i.status = 'suspended_awaiting_input'
          order by i.id`),
      );
      for (const member of suspended) {
        assertDeadlineWithinDueBefore(member.id, deadlineOf(member.suspension), [{ portfolio_id: portfolioId, due_before: dueBefore }]);
      }
    }
    const changes: Record<string, unknown> = {};
    const set: SQL[] = [sql`, version = version + 1, updated_at = ${now}`];
    if (body.name !== undefined) {
      changes.name = body.name;
      set.push(sql`, name = ${body.name}`);
    }
    if (body.description !== undefined) {
      changes.description = body.description;
      set.push(sql`, description = ${body.description}`);
    }
    if (dueBefore !== undefined) {
      changes.due_before = dueBefore ? isoTimestamp(dueBefore) : null;
      set.push(sql`, due_before = ${dueBefore}`);
    }
    if (body.metadata !== undefined) {
      changes.metadata = body.metadata;
      set.push(sql`, metadata = ${JSON.stringify(body.metadata)}::jsonb`);
    }
    await appendToPortfolioLog(
      tx,
      portfolioId,
      [newEvent(portfolioEvents.updated, caller.actor, { changes, version: current.version + 1 })],
      now,
      sql.join(set, sql``),
    );
    return (await selectDetail(tx, portfolioId))!;
  });
  ctx.published();
  return detail;
}

/**
 * POST /portfolios/{id}/intents: adds a member. The intent is read under a share lock (taken
 * before the portfolio's, the order suspension.begin takes them), so it cannot begin a
 * suspension unseen; a suspended intent whose deadline runs past due_before is refused.
 * An If-Match is honoured when sent. Version + 1; portfolio.member_added (and
 * portfolio.status_changed when the aggregate moves).
 */
export async function addMember(ctx: IntentsContext, portfolioId: string, ifMatch: number | null, body: AddMemberBody, caller: Caller): Promise<PortfolioDetail> {
  const now = ctx.clock.now();
  const detail = await ctx.db.transaction(async (tx) => {
    const [intent] = rowsOf<{ status: string; event_seq: string | number; suspension: unknown }>(
      await tx.execute(sql`select status, event_seq, state->'_suspension' as suspension from intents.intents where id = ${body.intent_id} for share`),
    );
    const current = await lockPortfolio(tx, portfolioId, ifMatch);
    if (!intent) throw errors.notFound("intent", body.intent_id);
    const status = intent.status as IntentStatus;
    if (status === "suspended_awaiting_input" && current.dueBefore) {
      assertDeadlineWithinDueBefore(body.intent_id, deadlineOf(intent.suspension), [{ portfolio_id: portfolioId, due_before: current.dueBefore }]);
    }
    const counts = await countMembers(tx, portfolioId);
    const size = Object.values(counts).reduce((a, b) => a + b, 0);
    if (size >= MAX_PORTFOLIO_MEMBERS) {
      throw appError("PORTFOLIO_FULL", `portfolio ${portfolioId} already has ${MAX_PORTFOLIO_MEMBERS} members, the most it may hold`, {
        portfolio_id: portfolioId,
        limit: MAX_PORTFOLIO_MEMBERS,
      });
    }
    const inserted = rowsOf(
      await tx.execute(sql`
        insert into intents.portfolio_members (portfolio_id, intent_id, role, added_by, added_at, intent_status, intent_sequence)
        values (${portfolioId}, ${body.intent_id}, ${body.role ?? null}, ${caller.actor}, ${now}, ${status}, ${Number(intent.event_seq)})
        on conflict do nothing returning intent_id`),
    );
    if (!inserted.length) {
      throw appError("MEMBER_EXISTS", `intent ${body.intent_id} is already a member of portfolio ${portfolioId}`, {
        portfolio_id: portfolioId,
        intent_id: body.intent_id,
      });
    }
    counts[status] = (counts[status] ?? 0) + 1;
    const next = aggregateStatus(counts);
    const version = current.version + 1;
    await appendToPortfolioLog(
      tx,
      portfolioId,
      [
        newEvent(portfolioEvents.memberAdded, caller.actor, { intent_id: body.intent_id, role: body.role ?? null, intent_status: status, status: next, version }),
        ...aggregateEvent(current.status, next, caller.actor, { intent_id: body.intent_id, cause: portfolioEventTypes.memberAdded }),
      ],
      now,
      sql`, version = ${version}, status = ${next}, updated_at = ${now}`,
    );
    return (await selectDetail(tx, portfolioId))!;
  });
  ctx.published();
  return detail;
}

/** DELETE /portfolios/{id}/intents/{intentId}: 404 MEMBER_NOT_FOUND when it is not a member; If-Match honoured. */
export async function removeMember(ctx: IntentsContext, portfolioId: string, ifMatch: number | null, intentId: string, caller: Caller): Promise<PortfolioDetail> {
  const now = ctx.clock.now();
  const detail = await ctx.db.transaction(async (tx) => {
    const current = await lockPortfolio(tx, portfolioId, ifMatch);
    const [removed] = rowsOf<{ intent_status: string }>(
      await tx.execute(sql`delete from intents.portfolio_members where portfolio_id = ${portfolioId} and intent_id = ${intentId} returning intent_status`),
    );
    if (!removed) {
      throw appError("MEMBER_NOT_FOUND", `intent ${intentId} is not a member of portfolio ${portfolioId}`, {
        resource: "member",
        portfolio_id: portfolioId,
        intent_id: intentId,
      });
    }
    const next = aggregateStatus(await countMembers(tx, portfolioId));
    const version = current.version + 1;
    await appendToPortfolioLog(
      tx,
      portfolioId,
      [
        newEvent(portfolioEvents.memberRemoved, caller.actor, { intent_id: intentId, intent_status: removed.intent_status, status: next, version }),
        ...aggregateEvent(current.status, next, caller.actor, { intent_id: intentId, cause: portfolioEventTypes.memberRemoved }),
      ],
      now,
      sql`, version = ${version}, status = ${next}, updated_at = ${now}`,
    );
    return (await selectDetail(tx, portfolioId))!;
  });
  ctx.published();
  return detail;
}

/** GET /portfolios/{id}/events: oldest first after a sequence number or an event id; `tail=true` for the newest. */
export async function listPortfolioEvents(ctx: IntentsContext, portfolioId: string, query: ListEventsQuery): Promise<RawJson<CommandResult<typeof portfoliosCommands.listEvents>>> {
  const after = await resolveCursor(ctx, portfolioId, query.after);
  const tail = query.tail === "true";
  const typeFilter = query.event_type ? sql`and event_type = ${query.event_type}` : sql``;
  const rows = rowsOf<{ sequence: string | number; wire: string }>(
    await ctx.db.execute(sql`
      select sequence, wire from intents.portfolio_events
      where portfolio_id = ${portfolioId} and sequence > ${after} ${typeFilter}
      order by sequence ${tail ? sql`desc` : sql`asc`} limit ${query.limit + 1}`),
  );
  if (!rows.length) await assertPortfolioExists(ctx.db, portfolioId);
  const { items: page, cut } = fitPage(rows.slice(0, query.limit), (row) => Buffer.byteLength(row.wire));
  if (tail) page.reverse();
  const last = page[page.length - 1];
  // Always a sequence number, so a client can resume after an empty page too.
  const cursor = String(last ? Number(last.sequence) : after);
  const hasMore = !tail && (cut || rows.length > query.limit);
  return new RawJson<CommandResult<typeof portfoliosCommands.listEvents>>(`{"events":[${page.map((r) => r.wire).join(",")}],"next_cursor":"${cursor}","has_more":${hasMore}}`);
}

async function assertPortfolioExists(db: Queryable, portfolioId: string): Promise<void> {
  const [row] = rowsOf(await db.execute(sql`select 1 from intents.portfolios where id = ${portfolioId}`));
  if (!row) throw errors.notFound("portfolio", portfolioId);
}

async function resolveCursor(ctx: IntentsContext, portfolioId: string, after: string | undefined): Promise<number> {
  if (after === undefined || after === "") return 0;
  const sequence = sequenceCursor(after);
  if (sequence !== undefined) return sequence;
  if (!Uuid.safeParse(after).success) throw errors.validation("after must be a sequence number or an event id");
  const [row] = rowsOf<{ sequence: string | number }>(
    await ctx.db.execute(sql`select sequence from intents.portfolio_events where portfolio_id = ${portfolioId} and id = ${after}`),
  );
  if (row) return Number(row.sequence);
  await assertPortfolioExists(ctx.db, portfolioId);
  throw errors.validation(`after names no event of portfolio ${portfolioId}: give a sequence number or an event id of this portfolio`);
}
