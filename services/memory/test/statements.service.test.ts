import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeCheckCommands, type Caller, type CreateMemoryBody } from "@intentmesh/contracts";
import { openCountingDatabase, verbsOf, type CountingDatabase } from "../../../test/support/statement-count";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import { UNKNOWN_ID, uniqueTag } from "../../../test/support/e2e-helpers";
import { createEntry, deleteEntry, patchEntry } from "../src/handlers/entries";
import type { MemoryContext } from "../src/context";
import type { MemoryService } from "../src/service";

/**
 * The work of one memory write scoped to an intent, counted rather than timed (issue 32): the
 * requests memory asks of the intents service (its ACL and governance policy in one), and the
 * statements memory sends. A regression of the saving fails here; the refusals the one request
 * answers keep their codes beside it.
 */
let harness: ServiceHarness<{ memory: MemoryService; stop(): Promise<void> }>;
let counting: CountingDatabase;
beforeAll(async () => {
  harness = await startServiceHarness(manifestServices({ intents: QUIET.intents, registry: QUIET.registry, memory: QUIET.memory }));
  counting = await openCountingDatabase(harness.databaseUrl);
});
afterAll(async () => {
  await counting?.close();
  await harness?.stop();
});

const admin = () => harness.sdk("admin");
const agentCaller = (agentId: string): Caller => ({ principal: "agent-1", roles: ["agent"], actor: agentId, agent_id: agentId });
const statementShapes = (statements: string[]) => statements.map((text) => text.replace(/\s+/g, " ").trim().slice(0, 80));

/** Runs one create through the handler on the counting pool; answers its statements and the intents subjects it asked. */
const countedCreate = (caller: Caller, body: CreateMemoryBody) => counted((ctx) => createEntry(ctx, body, caller));

/** Runs one handler on the counting pool; answers its result or error, its statements and the intents subjects it asked. */
async function counted<T>(work: (ctx: MemoryContext) => Promise<T>) {
  const ctx: MemoryContext = { ...harness.service.memory.ctx, db: counting.db, query: counting.query };
  const asked: string[] = [];
  const sub = harness.bus.nc.subscribe(harness.bus.subject("im.intents.>"), { callback: (_err, msg) => void asked.push(msg.subject) });
  try {
    const { result, statements } = await counting.count(() => work(ctx).then((entry) => ({ entry }), (error: unknown) => ({ error })));
    await harness.bus.nc.flush();
    return { ...result, statements, asked };
  } finally {
    sub.unsubscribe();
  }
}

const entry = (intentId: string, memoryType: "working" | "episodic" = "working"): CreateMemoryBody =>
  ({ namespace: "counted", key: uniqueTag("k"), value: { n: 1 }, memory_type: memoryType, tags: [], scope: { intent_id: intentId } }) as CreateMemoryBody;

describe("the work of one memory write on an intent (issue 32)", () => {
  it("a working entry: one request to intents (ACL and governance together), one statement in memory", async () => {
    const intent = await admin().ops.intentsCreate({ body: { title: "counted", status: "active" } });
    const agentId = uniqueTag("writer");
    const work = await countedCreate(agentCaller(agentId), entry(intent.id));
    expect(work).toMatchObject({ entry: { agent_id: agentId, scope: { intent_id: intent.id } } });
    expect(work.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
    expect(statementShapes(work.statements)).toEqual([expect.stringMatching(/^with e as \( insert into memory\.entries/)]);
  });

  it("the one request answers each refusal as the three did: no intent is 404, a policy that leaves the agent out is 403 GOVERNANCE_VIOLATION", async () => {
    const missing = await countedCreate(agentCaller(uniqueTag("writer")), entry(UNKNOWN_ID));
    expect(missing).toMatchObject({ error: { code: "INTENT_NOT_FOUND", status: 404 } });
    expect(missing.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
    expect(missing.statements).toEqual([]);

    const intent = await admin().ops.intentsCreate({ body: { title: "governed", status: "active" } });
    const set = await admin().send("governancePolicySet", { intent_id: intent.id, ifMatch: intent.version, body: { allowed_agents: ["somebody-else"] } });
    expect(set.status).toBe(200);
    const refused = await countedCreate(agentCaller(uniqueTag("writer")), entry(intent.id));
    expect(refused).toMatchObject({ error: { code: "GOVERNANCE_VIOLATION", status: 403 } });
    expect(refused.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
    expect(refused.statements).toEqual([]);
  });

  it("a PATCH and a DELETE of an entry on an intent: the entry read once before their transaction, one request to intents", async () => {
    const intent = await admin().ops.intentsCreate({ body: { title: "changed", status: "active" } });
    const caller = agentCaller(uniqueTag("writer"));
    const created = await countedCreate(caller, entry(intent.id));
    if (!("entry" in created)) throw created.error;
    const id = created.entry.id;
    const patched = await counted((ctx) => patchEntry(ctx, id, 1, { value: { n: 2 } }, caller));
    expect(patched).toMatchObject({ entry: { version: 2, value: { n: 2 } } });
    expect(patched.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
    // The entry's read before the transaction; its lock, the conditional update and the event in it.
    expect(verbsOf(patched.statements)).toEqual(["select", "begin", "select", "update", "insert", "commit"]);
    const deleted = await counted((ctx) => deleteEntry(ctx, id, caller));
    expect(deleted).toMatchObject({ entry: { status: "deleted", entry_id: id } });
    expect(deleted.asked).toEqual([harness.bus.subject(writeCheckCommands.check.subject)]);
  });
});
