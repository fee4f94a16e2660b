import type { Caller, Clock } from "@intentmesh/contracts";
import type { BusClient } from "@intentmesh/bus";
import type { GovernanceChecks, IntentWriteChecks } from "@intentmesh/service";
import type { Database, DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Guardrails } from "./domain/access";

/** What every handler of the memory service works with. */
export interface MemoryContext {
  db: Database;
  query: DatabaseHandle["query"];
  clock: Clock;
  logger: Logger;
  /** Requests to the intents service (tasks, intents) and the registry (role_id). */
  client: BusClient;
  /** Governance checks of writes scoped to an intent (spec 2.11), sent together per event-loop turn. */
  governance: GovernanceChecks;
  /** A create's ACL and governance checks in one request per intent (scope-write-checks.ts), sent together per event-loop turn. */
  writes: IntentWriteChecks;
  /** The coordinator guardrails of 2.14, server-wide (MEMORY_GUARDRAILS). */
  guardrails: Guardrails;
  /** Episodic capacity of an agent without its own setting (spec default 1000). */
  episodicCapacity: number;
  /** Tells the outbox relay that a commit enqueued messages. */
  published(): void;
}

/** The identity memory uses for its own questions to other services (task records, agent role ids). */
export const SERVICE_CALLER: Caller = { principal: "service:memory", roles: ["admin"], actor: "service:memory", agent_id: null };
