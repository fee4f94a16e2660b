import { randomUUID } from "node:crypto";
import { SCHEMA_HEADER, VAULT_EVENT_SCHEMA, isoTimestamp, vaultEventMsgId, vaultEventSubject, type EventPayload, type VaultEvent, type VaultEventDefinition } from "@intentmesh/contracts";
import { enqueue, newSystemEvent, systemEventMessage, type OutboxMessage } from "@intentmesh/bus";
import type { Tx } from "@intentmesh/db";
import { outbox } from "./db/schema";

/** A vault definition that also goes to an intent's log (a system event there: tool.invoked). */
type IntentLoggedDefinition = Extract<VaultEventDefinition, { logs: readonly ("vault" | "intent")[]; system: true }>;

/** A vault event about to be written: never secret material (docs/vaults.md). Built by vaultEvent. */
export interface NewVaultEvent {
  definition: VaultEventDefinition;
  /** The id of the credential, grant or invocation, or the agent id for identity events. */
  key: string;
  actor: string;
  agentId: string | null;
  payload: Record<string, unknown>;
  /** Also appended to this intent's log (system-event path); only for definitions that go there. */
  intentId?: string | null;
}

/**
 * One of the vault's events, typed by its definition (libs/contracts vault.ts vaultEvents): the
 * name and the subject's kind come from the definition, the payload must have its schema's shape,
 * and only a definition that goes to an intent's log takes an intent id.
 */
export function vaultEvent<D extends VaultEventDefinition>(
  definition: D,
  event: { key: string; actor: string; agentId: string | null; payload: EventPayload<D> } & (D extends IntentLoggedDefinition ? { intentId: string | null } : { intentId?: never }),
): NewVaultEvent {
  return { definition, key: event.key, actor: event.actor, agentId: event.agentId, payload: event.payload as Record<string, unknown>, intentId: event.intentId ?? null };
}

/** Writes the events into the outbox of the caller's transaction: IM_VAULT, and the intent's log where one is named. */
export async function writeVaultEvents(tx: Tx, events: NewVaultEvent[], at: Date): Promise<void> {
  const occurredAt = isoTimestamp(at);
  const messages: OutboxMessage[] = [];
  for (const event of events) {
    const id = randomUUID();
    const body: VaultEvent = { id, event_type: event.definition.name, actor: event.actor, agent_id: event.agentId, payload: event.payload, occurred_at: occurredAt };
    messages.push({ subject: vaultEventSubject(event.definition, event.key), msgId: vaultEventMsgId(id), payload: body, headers: { [SCHEMA_HEADER]: VAULT_EVENT_SCHEMA } });
    if (event.intentId && event.definition.system) {
      messages.push(
        systemEventMessage(
          newSystemEvent(event.definition as IntentLoggedDefinition, { source: "vault", intentId: event.intentId, actor: event.actor, payload: event.payload as EventPayload<IntentLoggedDefinition>, at }),
        ),
      );
    }
  }
  await enqueue(tx, outbox, messages);
}
