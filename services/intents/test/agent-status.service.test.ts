import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import { agentStatus } from "../src/db/schema-agents";
import { recordStatus } from "../src/agents/lifecycle-projection";
import type { IntentsService } from "../src/service";

/**
 * recordStatus, the projection's upsert of intents.agent_status, is SQL text made once
 * (agents/lifecycle-projection.ts): it keeps the builder's rule that only a newer event moves the
 * status, and writes the row the builder reads back.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ intents: QUIET.intents }));
});
afterAll(async () => {
  await harness?.stop();
});

describe("recordStatus", () => {
  it("inserts, moves on with a newer event only, and answers whether it applied", async () => {
    const { db } = harness.database;
    const id = uniqueTag("status");
    const at = (s: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, s, 567));
    const read = async () => (await db.select().from(agentStatus).where(eq(agentStatus.agentId, id)))[0];
    expect(await db.transaction((tx) => recordStatus(tx, id, "active", 1, at(1)))).toBe(true);
    expect(await read()).toEqual({ agentId: id, status: "active", eventSequence: 1, updatedAt: at(1) });
    expect(await db.transaction((tx) => recordStatus(tx, id, "draining", 3, at(3)))).toBe(true);
    expect(await db.transaction((tx) => recordStatus(tx, id, "unhealthy", 2, at(2)))).toBe(false);
    expect(await db.transaction((tx) => recordStatus(tx, id, "dead", 3, at(4)))).toBe(false);
    expect(await read()).toEqual({ agentId: id, status: "draining", eventSequence: 3, updatedAt: at(3) });
  });
});
