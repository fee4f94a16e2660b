import { appError, intentEvents } from "@intentmesh/contracts";
import { randomUUID } from "node:crypto";
import { enforceGovernance } from "../governance/handlers";
import { and, asc, eq, gt } from "drizzle-orm";
import { errors, fitPage, isoTimestamp, type Attachment, type Caller, type CreateAttachmentBody } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { IntentsContext } from "../kernel/context";
import { attachments } from "../db/schema-records";
import { appendToLog, assertIntentExists } from "../kernel/event-log";
import { metadataIssues } from "./metadata";
import { allows } from "../kernel/access";

type AttachmentRow = typeof attachments.$inferSelect;

export function toAttachment(row: AttachmentRow): Attachment {
  return {
    id: row.id,
    intent_id: row.intentId,
    filename: row.filename,
    mime_type: row.mimeType,
    size: row.size,
    storage_url: row.storageUrl,
    metadata: row.metadata,
    uploaded_by: row.uploadedBy,
    created_at: isoTimestamp(row.createdAt),
  };
}

/**
 * POST /intents/{id}/attachments. Stores the reference (storage_url is never fetched) and
 * appends intent.attachment_added, in one transaction. The metadata keys of spec 2.7 must suit
 * the mime type; the uploader is the acting agent (or the key's principal).
 */
export async function createAttachment(
  ctx: IntentsContext,
  intentId: string,
  ifMatch: number | null,
  body: CreateAttachmentBody,
  caller: Caller,
): Promise<Attachment> {
  await enforceGovernance(ctx, intentId, undefined, { kind: "attachment" }, caller);
  const issues = metadataIssues(body.mime_type, body.metadata);
  if (issues.length) {
    throw appError("VALIDATION_FAILED", `the request is invalid: ${issues[0]!.message}`, {
      key: issues[0]!.key,
      issues: issues.map((issue) => ({ path: `body.metadata.${issue.key}`, message: issue.message, code: "custom" })),
    });
  }
  const now = ctx.clock.now();
  const attachment = await ctx.db.transaction(async (tx) => {
    const id = randomUUID();
    // The log append locks the intent (404 when absent, 409 on a stale If-Match) before the insert.
    await appendToLog(
      tx,
      intentId,
      [
        // The storage URL stays out of the event: a pre-signed URL is a capability, readable through GET, not broadcast.
        newEvent(intentEvents.attachmentAdded, caller.actor, { attachment_id: id, filename: body.filename, mime_type: body.mime_type, size: body.size, uploaded_by: caller.actor }),
      ],
      now,
      ifMatch,
    );
    const [row] = await tx
      .insert(attachments)
      .values({
        id,
        intentId,
        filename: body.filename,
        mimeType: body.mime_type,
        size: body.size,
        storageUrl: body.storage_url,
        metadata: body.metadata,
        uploadedBy: caller.actor,
        createdAt: now,
      })
      .returning();
    return toAttachment(row!);
  });
  ctx.published();
  return attachment;
}

/**
 * GET /intents/{id}/attachments: oldest first, as {attachments: [...], next_cursor, has_more},
 * in pages bounded by count and by bytes (an attachment's metadata may be up to 16 KiB).
 */
export async function listAttachments(
  ctx: IntentsContext,
  intentId: string,
  query: { after?: string | undefined; limit: number },
): Promise<{ attachments: Attachment[]; next_cursor: string; has_more: boolean }> {
  const after = Number(query.after ?? 0);
  const rows = await ctx.db
    .select()
    .from(attachments)
    .where(and(eq(attachments.intentId, intentId), gt(attachments.seq, after)))
    .orderBy(asc(attachments.seq))
    .limit(query.limit + 1);
  if (!rows.length) await assertIntentExists(ctx.db, intentId);
  const shown = fitPage(rows.slice(0, query.limit).map(toAttachment));
  const last = rows[shown.items.length - 1];
  return { attachments: shown.items, next_cursor: String(last?.seq ?? after), has_more: shown.cut || rows.length > query.limit };
}

/**
 * DELETE /intents/{id}/attachments/{attachment_id}: the uploader, a coordinator or an admin
 * removes the reference (the bytes elsewhere are untouched) and intent.attachment_removed is
 * appended. Answers the removed attachment. An attachment of another intent is 404.
 */
export async function deleteAttachment(ctx: IntentsContext, intentId: string, ifMatch: number | null, attachmentId: string, caller: Caller): Promise<Attachment> {
  await enforceGovernance(ctx, intentId, undefined, { kind: "attachment" }, caller);
  const now = ctx.clock.now();
  const removed = await ctx.db.transaction(async (tx) => {
    const [current] = await tx
      .select()
      .from(attachments)
      .where(and(eq(attachments.id, attachmentId), eq(attachments.intentId, intentId)))
      .for("update");
    if (!current) {
      await assertIntentExists(tx, intentId);
      throw errors.notFound("attachment", attachmentId);
    }
    if (!allows(caller, { permission: "attachment.delete", uploadedBy: current.uploadedBy })) {
      throw errors.forbidden(`attachment ${attachmentId} was uploaded by ${current.uploadedBy}; only it, a coordinator or an admin may delete it`, {
        uploaded_by: current.uploadedBy,
      });
    }
    await appendToLog(
      tx,
      intentId,
      [newEvent(intentEvents.attachmentRemoved, caller.actor, { attachment_id: attachmentId, filename: current.filename })],
      now,
      ifMatch,
    );
    // The row is locked (FOR UPDATE above): a concurrent delete of it waits, then finds nothing (404).
    await tx.delete(attachments).where(eq(attachments.id, attachmentId));
    return toAttachment(current);
  });
  ctx.published();
  return removed;
}
