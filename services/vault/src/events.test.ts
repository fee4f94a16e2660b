import { describe, expect, it } from "vitest";
import { SystemEvent, VaultEvent, isSystemIntentEventType, systemEventPayloadSchema, vaultEvents } from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import { vaultEvent, writeVaultEvents } from "./events";

/** A transaction that keeps the outbox rows it is given (enqueue inserts them in one statement). */
function capturingTx() {
  const rows: { subject: string; payload: unknown }[] = [];
  const tx = { insert: () => ({ values: async (values: { subject: string; payload: string }[]) => void rows.push(...values.map((row) => ({ subject: row.subject, payload: JSON.parse(row.payload) as unknown }))) }) } as unknown as Tx;
  return { tx, rows };
}

const invoked = {
  invocation_id: "inv-1",
  grant_id: "g-1",
  agent_id: "agent-1",
  service: "github",
  tool: "create_issue",
  status: "success",
  duration_ms: 12,
  cost: null,
  parameters_summary: {},
};

/**
 * The vault's writer is typed by the catalogue's vault definitions (libs/contracts vault.ts): the
 * `@ts-expect-error` lines are misuses that must not compile (`pnpm typecheck` fails on an unused
 * directive, so a rule that stops holding fails it).
 */
describe("vault events", () => {
  it("take the name, the subject's kind and the payload's shape from the definition", () => {
    const event = vaultEvent(vaultEvents.grantSuspended, { key: "g-1", actor: "owner", agentId: "agent-1", payload: { grant_id: "g-1", reason: null } });
    expect(event.definition.name).toBe("grant.suspended");
    // @ts-expect-error a payload without the schema's required fields
    vaultEvent(vaultEvents.grantCreated, { key: "g-1", actor: "owner", agentId: null, payload: { grant_id: "g-1" } });
    // @ts-expect-error a reason the schema does not know
    vaultEvent(vaultEvents.grantRevoked, { key: "g-1", actor: "owner", agentId: null, payload: { grant_id: "g-1", reason: "bored", cascade_count: 0 } });
    // @ts-expect-error only a definition that goes to an intent's log takes an intent id
    vaultEvent(vaultEvents.credentialRotated, { key: "c-1", actor: "owner", agentId: null, intentId: "i-1", payload: { credential_id: "c-1", rotated_by: "owner" } });
    // @ts-expect-error a misspelled event has no definition (compiled, not run)
    const misspelled = () => vaultEvent(vaultEvents.grantSuspend, { key: "g", actor: "a", agentId: null, payload: {} });
    expect(typeof misspelled).toBe("function");
  });

  it("are published under im.evt.vault.<kind>.<id>.<name> in the vault's envelope; tool.invoked also goes to the named intent's log", async () => {
    const { tx, rows } = capturingTx();
    const intentId = "0f6a3d9e-3b6b-4bb5-9a9f-6a1c2f6f2a22";
    await writeVaultEvents(
      tx,
      [
        vaultEvent(vaultEvents.credentialRevoked, { key: "c-1", actor: "owner", agentId: null, payload: { credential_id: "c-1", reason: "revoked", affected_grants_count: 0 } }),
        vaultEvent(vaultEvents.identityRegistered, { key: "agent-1", actor: "agent-1", agentId: "agent-1", payload: { agent_id: "agent-1", public_key: "k", did: "did:key:z" } }),
        vaultEvent(vaultEvents.toolInvoked, { key: "inv-1", actor: "agent-1", agentId: "agent-1", intentId, payload: invoked }),
        vaultEvent(vaultEvents.toolInvoked, { key: "inv-2", actor: "agent-1", agentId: "agent-1", intentId: null, payload: { ...invoked, invocation_id: "inv-2" } }),
      ],
      new Date("2026-01-01T00:00:00Z"),
    );
    expect(rows.map((row) => row.subject)).toEqual([
      "im.evt.vault.credential.c-1.credential.revoked",
      expect.stringMatching(/^im\.evt\.vault\.identity\.[^.]+\.agent\.identity\.registered$/),
      "im.evt.vault.invocation.inv-1.tool.invoked",
      expect.stringContaining(intentId),
      "im.evt.vault.invocation.inv-2.tool.invoked",
    ]);
    const vaultRows = rows.filter((row) => row.subject.startsWith("im.evt.vault."));
    for (const row of vaultRows) {
      const envelope = VaultEvent.parse(row.payload);
      const definition = Object.values(vaultEvents).find((candidate) => candidate.name === envelope.event_type)!;
      expect(definition.payload.safeParse(envelope.payload).success, envelope.event_type).toBe(true);
    }
    const onIntent = SystemEvent.parse(rows[3]!.payload);
    expect(onIntent).toMatchObject({ source: "vault", intent_id: intentId, event_type: "tool.invoked" });
    expect(isSystemIntentEventType(onIntent.event_type)).toBe(true);
    expect(systemEventPayloadSchema(onIntent.event_type)!.safeParse(onIntent.payload).success).toBe(true);
  });
});
