import { z } from "./zod";
import { intentEvents } from "./event-types";
import { governanceEvents } from "./event-catalogue";

/**
 * The operators' inbox (GET /subscribe/inbox, docs/console.md): every suspension awaiting input
 * and every pending approval. The stream carries hints, not facts: each frame names an intent
 * whose waiting items may have changed, and the reader reads that intent's items again. A missed
 * hint (a gateway restarting, NATS reconnecting) costs a late refresh, never a lost answer, so
 * hints travel on core NATS and the reader also reads everything again on every (re)connection.
 */

/** Intent events after which an intent's waiting items differ. */
export const INBOX_EVENT_TYPES = [
  intentEvents.suspended.name,
  intentEvents.resumed.name,
  intentEvents.suspensionExpired.name,
  governanceEvents.approvalGranted.name,
  governanceEvents.approvalDenied.name,
] as const;

/**
 * A new approval is no event of the intent's log (the official clients' server writes none, and
 * the clients' closed EventType enum would refuse one), so the governance service announces it on
 * its own subject, once its row has committed: im.notice.inbox.<intent_id>.
 */
export const APPROVAL_REQUESTED = "approval_requested" as const;
export const inboxNoticeSubject = (intentId: string) => `im.notice.inbox.${intentId}`;
export const INBOX_NOTICE_FILTER = "im.notice.inbox.*";

export const InboxCause = z.enum([...INBOX_EVENT_TYPES, APPROVAL_REQUESTED]);
export type InboxCause = z.infer<typeof InboxCause>;

/** One frame of GET /subscribe/inbox (`event: inbox`): which intent, and what happened to it. */
export const InboxHint = z.object({ intent_id: z.string(), cause: InboxCause }).strict();
export type InboxHint = z.infer<typeof InboxHint>;
