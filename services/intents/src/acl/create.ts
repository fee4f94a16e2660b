import { randomUUID } from "node:crypto";
import { isoTimestamp, type Caller, type Intent, type SetAclBody, intentEvents } from "@intentmesh/contracts";
import { newEvent } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import type { IntentsContext } from "../kernel/context";
import { intents } from "../db/schema";
import { aclEntries } from "../db/schema-acl";
import { appendToLog, type NewEvent } from "../kernel/event-log";
import { assertExpiryAhead } from "./rules";

/**
 * POST /intents with `acl`: the intent, its ACL (owner: the creating key's principal) and its
 * entries, with intent_created and access_granted (action acl_set), in one transaction, so the
 * intent is never readable by anyone the ACL leaves out, not even for a moment.
 *
 * Also the path of an intent created in a graph (RFC-0002, graph/handlers.ts), with or without
 * an ACL: `before` runs first in the same transaction (it locks and checks the parent and the
 * dependencies the intent names).
 */
export async function insertIntentWithAcl(
  ctx: IntentsContext,
  intent: Intent,
  created: NewEvent,
  acl: SetAclBody | undefined,
  caller: Caller,
  now: Date,
  before?: (tx: Tx) => Promise<void>,
): Promise<void> {
  for (const entry of acl?.entries ?? []) assertExpiryAhead(entry.expires_at ? new Date(entry.expires_at) : null, now);
  await ctx.db.transaction(async (tx) => {
    await before?.(tx);
    await tx.insert(intents).values({
      id: intent.id,
      title: intent.title,
      description: intent.description,
      createdBy: intent.created_by,
      status: intent.status,
      constraints: intent.constraints,
      state: intent.state,
      confidence: intent.confidence,
      version: 1,
      eventSeq: 0,
      createdAt: now,
      updatedAt: now,
      // RFC-0002: created active with a dependency not completed, the intent is blocked by the server (graph/handlers.ts).
      blockedReason: intent.status === "blocked" ? "dependencies" : null,
      parentIntentId: intent.parent_intent_id,
      dependsOn: intent.depends_on,
      ...(acl ? { aclPolicy: acl.default_policy, aclDefault: acl.default_permission, aclOwner: caller.principal, aclVersion: 1 } : {}),
    });
    if (!acl) {
      await appendToLog(tx, intent.id, [created], now);
      return;
    }
    const rows = acl.entries.length
      ? await tx
          .insert(aclEntries)
          .values(
            acl.entries.map((entry) => ({
              id: randomUUID(),
              intentId: intent.id,
              principalType: entry.principal_type,
              principalId: entry.principal_id,
              permission: entry.permission,
              grantedBy: caller.actor,
              grantedAt: now,
              expiresAt: entry.expires_at ? new Date(entry.expires_at) : null,
              reason: entry.reason ?? null,
            })),
          )
          .returning()
      : [];
    const aclSet: NewEvent = newEvent(intentEvents.accessGranted, caller.actor, {
      action: "acl_set",
      default_policy: acl.default_policy,
      default_permission: acl.default_permission,
      entries: rows.map((row) => ({ entry_id: row.id, principal_id: row.principalId, principal_type: row.principalType, permission: row.permission, expires_at: row.expiresAt ? isoTimestamp(row.expiresAt) : null })),
      removed_entry_ids: [],
      acl_version: 1,
    });
    await appendToLog(tx, intent.id, [created, aclSet], now);
  });
}
