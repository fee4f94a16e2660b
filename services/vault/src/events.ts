import { randomUUID } from "node:crypto";
import { SCHEMA_HEADER, VAULT_EVENT_SCHEMA, isoTimestamp, vaultEventMsgId, vaultEventSubject, type VaultEvent, type VaultEventKind, type VaultEventType } from "@intentmesh/contracts";
import { enqueue, systemEventMessage, type OutboxMessage } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { outbox } from "./db/schema";

/** A vault event about to be written: never secret material (docs/vaults.md). */
export interface NewVaultEvent {
  kind: VaultEventKind;
  /** The id of the credential, grant or invocation, or the agent id for identity events. */
  key: string;
  type: VaultEventType;
  actor: string;
  agentId: string | null;
  payload: Record<string, unknown>;
  /** Also appended to this intent's log (system-event path), e.g. tool.invoked. */
  intentId?: string | null;
}

/** Writes the events into the outbox of the caller's transaction: IM_VAULT, and the intent's log where one is named. */
export async function writeVaultEvents(tx: Tx, events: NewVaultEvent[], at: Date): Promise<void> {
  const occurredAt = isoTimestamp(at);
  const messages: OutboxMessage[] = [];
  for (const event of events) {
    const id = randomUUID();
    const body: VaultEvent = { id, event_type: event.type, actor: event.actor, agent_id: event.agentId, payload: event.payload, occurred_at: occurredAt };
    messages.push({ subject: vaultEventSubject(event.kind, event.key, event.type), msgId: vaultEventMsgId(id), payload: body, headers: { [SCHEMA_HEADER]: VAULT_EVENT_SCHEMA } });
    if (event.intentId) {
      messages.push(systemEventMessage({ id: randomUUID(), source: "vault", intent_id: event.intentId, event_type: event.type, actor: event.actor, payload: event.payload, occurred_at: occurredAt }));
    }
  }
  await enqueue(tx, outbox, messages);
}
