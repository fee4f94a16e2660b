import { assertIoTypes } from "../workflows/rules";
import { randomUUID } from "node:crypto";
import { and, eq, inArray, lt, or, sql, type SQL } from "drizzle-orm";
import { appError, type Caller, type CreateIntentBody, decodeKeysetCursor, encodeKeysetCursor, errors, type Intent, type CommandResult, intentsCommands, isoTimestamp, LIMITS, type ListIntentsQuery, intentEvents } from "@intentmesh/contracts";
import { newEvent, RawJson } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { intents } from "../db/schema";
import { insertIntent, intentJsonSql, rawToIntent, selectIntent, selectIntentJson, SHOWN_WITHIN_PAGE_BYTES, wireTimestampSql } from "../kernel/statements";
import { isUniqueViolation, rowsOf } from "@intentmesh/db";
import { RESERVED_STATE_KEYS } from "./state-patch";
import { bypassesAcl } from "../acl/rules";
import { readableBy } from "../acl/statements";
import { insertIntentWithAcl } from "../acl/create";
import { assertGraphAccess, lockGraphOfNewIntent } from "../graph/handlers";

/** POST /intents: the intent at version 1 and its intent_created event, in one statement. */
export async function createIntent(ctx: IntentsContext, body: CreateIntentBody, caller: Caller, chosenId?: string, parentChecked = false): Promise<Intent> {
  const reserved = Object.keys(body.state).filter((key) => (RESERVED_STATE_KEYS as readonly string[]).includes(key));
  if (reserved.length) throw errors.validation(`state.${reserved[0]} is managed by the server and cannot be set at creation`);
  // state._io_types holds named workflow types (spec 2.1, RFC 0024): checked where it is written.
  assertIoTypes(body.state);
  const now = ctx.clock.now();
  const at = isoTimestamp(now);
  const intent: Intent = {
    id: chosenId ?? randomUUID(),
    title: body.title,
    description: body.description ?? null,
    created_by: body.created_by ?? caller.actor,
    status: body.status,
    constraints: body.constraints,
    state: body.state,
    confidence: body.confidence,
    version: 1,
    created_at: at,
    updated_at: at,
    parent_intent_id: body.parent_intent_id ?? null,
    depends_on: body.depends_on,
  };
  const inGraph = intent.parent_intent_id !== null || intent.depends_on.length > 0;
  // RFC-0002: admin on the parent (decomposing it), read on every dependency (docs/graphs.md).
  if (inGraph) await assertGraphAccess(ctx, intent, caller, parentChecked);
  const { id: _id, state: _state, created_at: _c, updated_at: _u, ...announced } = intent;
  const created = newEvent(intentEvents.created, caller.actor, announced);
  try {
    // With an ACL the intent is never open: both commit in one transaction (acl/create.ts).
    if (inGraph) await insertIntentWithAcl(ctx, intent, created, body.acl, caller, now, (tx) => lockGraphOfNewIntent(tx, intent, created));
    else if (body.acl) await insertIntentWithAcl(ctx, intent, created, body.acl, caller, now);
    else await insertIntent(ctx.query, intent, created, now);
  } catch (error) {
    if (chosenId && isUniqueViolation(error)) return existingCreation(ctx, chosenId, intent.created_by, caller);
    throw error;
  }
  ctx.published();
  return intent;
}

/**
 * The intent as an object, read with one statement; the ACL is asked only when the row says the
 * intent has one. GET /intents/{id} answers the same as JSON from PostgreSQL (getIntentReply).
 */
export async function getIntent(ctx: IntentsContext, intentId: string, caller: Caller): Promise<Intent> {
  const row = await selectIntent(ctx.query, intentId);
  if (!row) throw errors.notFound("intent", intentId);
  await ctx.access.afterRead(intentsCommands.get, intentId, row.acl_policy, caller);
  return rawToIntent(row);
}

/**
 * GET /intents/{id} as served: getIntent's answer as the JSON PostgreSQL writes (selectIntentJson),
 * passed on without being parsed and encoded again.
 */
export async function getIntentReply(ctx: IntentsContext, intentId: string, caller: Caller): Promise<RawJson<Intent>> {
  const row = await selectIntentJson(ctx.query, intentId);
  if (!row) throw errors.notFound("intent", intentId);
  await ctx.access.afterRead(intentsCommands.get, intentId, row.acl_policy, caller);
  return new RawJson<Intent>(row.json, Number(row.version));
}

type IntentPage = CommandResult<typeof intentsCommands.list>;

/**
 * Newest first; the cursor is the (created_at, id) of the last intent of the previous page. The
 * page is the JSON PostgreSQL writes: each intent as GET serves it (intentJsonSql), joined into
 * one array, cut to LIMITS.pageBytes of that text like the event pages (SHOWN_WITHIN_PAGE_BYTES);
 * nothing is parsed or encoded again. `fetched` counts up to limit + 1 rows, so more than are
 * shown means another page follows.
 */
export async function listIntents(ctx: IntentsContext, query: ListIntentsQuery, caller: Caller): Promise<RawJson<IntentPage>> {
  const filters: SQL[] = [];
  // Only the intents the caller may read (RFC-0011); admin keys are not bound by ACLs.
  if (!bypassesAcl(caller)) filters.push(readableBy(caller, ctx.clock.now()));
  if (query.status?.length) filters.push(inArray(intents.status, query.status));
  if (query.created_by) filters.push(eq(intents.createdBy, query.created_by));
  if (query.after) {
    const cursor = decodeKeysetCursor(query.after);
    filters.push(or(lt(intents.createdAt, cursor.createdAt), and(eq(intents.createdAt, cursor.createdAt), lt(intents.id, cursor.id)))!);
  }
  // Both are integers (the query's limit is validated as one), written into the text as numbers.
  const shownWithin = sql.raw(SHOWN_WITHIN_PAGE_BYTES("created_at desc, id desc", String(Math.trunc(query.limit)), String(LIMITS.pageBytes)));
  const [row] = rowsOf<{ fetched: number; shown: number; intents: string; last_id: string | null; last_created_at: string | null }>(
    await ctx.db.execute(
      sql`with page as (
            select id, created_at, ${sql.raw(intentJsonSql("intents"))} as wire from ${intents}
            ${filters.length ? sql`where ${and(...filters)}` : sql``}
            order by created_at desc, id desc limit ${query.limit + 1}),
          ${shownWithin},
          last as (select id, ${sql.raw(wireTimestampSql("created_at"))} as created_at from shown order by n desc limit 1)
          select (select count(*)::int from page) as fetched,
                 (select count(*)::int from shown) as shown,
                 (select '[' || coalesce(string_agg(wire, ',' order by n), '') || ']' from shown) as intents,
                 (select id from last) as last_id,
                 (select created_at from last) as last_created_at`,
    ),
  );
  const hasMore = Number(row!.fetched) > Number(row!.shown);
  // The cursor holds the created_at the page served (milliseconds), as when it was read from the intent.
  const next = hasMore && row!.last_id !== null ? JSON.stringify(encodeKeysetCursor(new Date(row!.last_created_at!), row!.last_id)) : "null";
  return new RawJson<IntentPage>(`{"intents":${row!.intents},"next_cursor":${next},"has_more":${hasMore}}`);
}

/** A create under a chosen id that already exists: the same creator gets that intent, anyone else 409. */
async function existingCreation(ctx: IntentsContext, intentId: string, createdBy: string, caller: Caller): Promise<Intent> {
  const existing = await getIntent(ctx, intentId, caller);
  if (existing.created_by !== createdBy) {
    throw appError("INTENT_EXISTS", `intent ${intentId} exists already, created by someone else`, { intent_id: intentId });
  }
  return existing;
}
