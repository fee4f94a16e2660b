import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { eq } from "drizzle-orm";
import { manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import { randomUUID } from "node:crypto";
import { AgentMemoryEvent, memoryEventMsgId, memoryEventSubject, memoryStream } from "@intentmesh/contracts";
import { agentEvents, agents } from "../src/db/schema";
import { agentSql, lockAgent, lockAgentId } from "../src/db/agent-sql";
import type { RegistryService } from "../src/service";

/**
 * Registration's statements (docs/benchmarks.md, register_agent) are SQL text made once
 * (db/agent-sql.ts): a counting wrapper around every pg client of this process pins what one
 * registration runs, and the rows the text statements read and return are held to the query
 * builder's.
 */
/** Each statement with the connection that ran it. */
const seen: { client: pg.Client; text: string; values: unknown[] }[] = [];
let counting = false;
// Installed before the harness opens its pool: each connection binds query() when it connects.
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as { text?: unknown } | string;
  if (counting) {
    const values = (typeof first === "object" && first !== null && Array.isArray((first as { values?: unknown }).values) ? (first as { values: unknown[] }).values : args[1]) ?? [];
    seen.push({ client: this, text: typeof first === "string" ? first : String(first?.text ?? ""), values: Array.isArray(values) ? values : [] });
  }
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

let harness: ServiceHarness<{ registry: RegistryService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ intents: { leaseSweepIntervalMs: 3_600_000, checkpoints: { intervalMs: 3_600_000 } }, registry: { sweepIntervalMs: 3_600_000 } }));
  // Outbox rows stay unpublished: the relay's statements are not the registration's.
  await harness.service.registry.relay.stop();
});
afterAll(async () => {
  pg.Client.prototype.query = query;
  await harness?.stop();
});

function kindOf(text: string): string {
  const s = text.replace(/\s+/g, " ").trim().toLowerCase();
  if (s === "begin" || s === "commit" || s === "rollback") return s;
  if (s.startsWith('insert into "registry"."agents" as r (')) return "insert agent (text)";
  if (s.startsWith('insert into "registry"."agent_events" (')) return "insert agent event (text)";
  if (/^insert into "registry"."outbox"/.test(s)) return "outbox";
  return s.slice(0, 120);
}

/**
 * The kinds of statements the registration's connection ran: the services beside it in this
 * process (the intents service's projection of the new agent's lifecycle event, a worker's turn)
 * run theirs on other connections meanwhile.
 */
function registrationStatements(): string[] {
  const registering = seen.find(({ text }) => kindOf(text) === "insert agent (text)")?.client;
  const kinds = seen.filter(({ client }) => client === registering).map(({ text }) => kindOf(text));
  // Its transaction: from the begin before the agent's INSERT to the commit after it.
  const insert = kinds.indexOf("insert agent (text)");
  return kinds.slice(kinds.lastIndexOf("begin", insert), kinds.indexOf("commit", insert) + 1);
}

const register = (body: Record<string, unknown>) => harness.api("agentsRegister", { key: "agent", body });

describe("registration's statements", () => {
  it("one registration: the agent, its lifecycle event and its outbox row as text statements in one transaction", async () => {
    const id = uniqueTag("counted");
    seen.length = 0;
    counting = true;
    try {
      expect((await register({ agent_id: id, capabilities: ["a", "b,\"c\""], metadata: { m: [1] } })).status).toBe(201);
    } finally {
      counting = false;
    }
    expect(registrationStatements()).toEqual(["begin", "insert agent (text)", "insert agent event (text)", "outbox", "commit"]);
  });

  it("return and lock the agent's row exactly as the query builder reads it", async () => {
    const { db } = harness.service.registry.ctx;
    const id = uniqueTag("rows");
    expect((await register({ agent_id: id, role_id: "r", name: "N", capabilities: ["x", "y z"], endpoint: "https://a.example.com", metadata: { k: { v: null } } })).status).toBe(201);
    const [built] = await db.select().from(agents).where(eq(agents.agentId, id));
    // Rolled back: the second row is this test's only.
    const checked = db.transaction(async (tx) => {
      expect(await lockAgent(tx, id)).toEqual(built);
      expect(await lockAgentId(tx, id)).toBe(true);
      expect(await lockAgentId(tx, `${id}-none`)).toBe(false);
      expect(await lockAgent(tx, `${id}-none`)).toBeUndefined();
      // An insert of an existing id inserts nothing; a new one returns the row the builder reads back.
      expect(await agentSql.insertIfAbsent(tx, { ...built!, name: "other" })).toBeUndefined();
      const fresh = await agentSql.insertIfAbsent(tx, { ...built!, agentId: `${id}-2`, drainDeadline: null, pendingCommands: [{ type: "drain" } as never] });
      const [freshBuilt] = await tx.select().from(agents).where(eq(agents.agentId, `${id}-2`));
      expect(fresh).toEqual(freshBuilt);
      tx.rollback();
    });
    await expect(checked).rejects.toThrow(/^Rollback$/);
  });
});

/** A memory event of the agent's, published as the memory service publishes it (events.ts). */
async function publishMemoryEvent(agentId: string): Promise<{ id: string; seq: number }> {
  const { bus } = harness;
  const id = randomUUID();
  const event: AgentMemoryEvent = {
    id,
    event_type: "memory.created",
    actor: agentId,
    payload: { type: "memory.created", agent_id: agentId, intent_id: null, task_id: null, data: { key: "k" }, timestamp: new Date().toISOString() },
  };
  const ack = await bus.js.publish(bus.subject(memoryEventSubject(agentId, { name: "memory.created" })), JSON.stringify(event), { msgID: memoryEventMsgId(id) });
  return { id, seq: ack.seq };
}

/** Until the registry's memory projection has acknowledged every message up to `seq`. */
async function projected(seq: number): Promise<void> {
  const { bus } = harness;
  for (let i = 0; i < 200; i++) {
    const info = await bus.jsm.consumers.info(bus.streamName(memoryStream.name), "registry-memory-events");
    if (info.ack_floor.stream_seq >= seq && info.num_ack_pending === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the memory projection did not acknowledge the event");
}

describe("the memory projection's statements", () => {
  const mentioning = (value: string) =>
    seen.filter(({ values }) => values.some((v) => v === value || (Array.isArray(v) && v.includes(value)))).map(({ text }) => text.replace(/\s+/g, " ").trim());

  it("an unknown agent's memory event: one lookup, no transaction, no inbox row, no lock", async () => {
    const id = uniqueTag("unknown");
    seen.length = 0;
    counting = true;
    let event: { id: string; seq: number };
    try {
      event = await publishMemoryEvent(id);
      await projected(event.seq);
    } finally {
      counting = false;
    }
    expect(mentioning(id)).toEqual(['select a."agent_id" from "registry"."agents" a where a."agent_id" = any($1::text[])']);
    expect(mentioning(memoryEventMsgId(event.id))).toEqual([]);
    const kinds = seen.map(({ text }) => kindOf(text));
    expect(kinds.filter((kind) => kind.includes('"registry"."inbox"') || kind.includes("for update"))).toEqual([]);
  });

  it("a known agent's memory event is still appended to its log, once", async () => {
    const id = uniqueTag("known");
    expect((await register({ agent_id: id })).status).toBe(201);
    const event = await publishMemoryEvent(id);
    await projected(event.seq);
    const { db } = harness.service.registry.ctx;
    const logged = await db.select().from(agentEvents).where(eq(agentEvents.agentId, id));
    expect(logged.map((row) => row.eventType)).toEqual(["agent.lifecycle", "memory.created"]);
  });
});
