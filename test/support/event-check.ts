import { findEvent, type EventLog } from "@intentmesh/contracts";
import type { DatabaseHandle } from "@intentmesh/db";

const LOG_TABLES: [EventLog, string][] = [
  ["intent", "intents.events"],
  ["portfolio", "intents.portfolio_events"],
  ["agent", "registry.agent_events"],
];

/**
 * Every event the test's cluster wrote, held against the event catalogue's payload schema for its
 * log and type (libs/contracts/src/event-catalogue.ts): answers one line per event that does not
 * match. Types outside the catalogue (a client's own event types) are the client's business.
 */
export async function eventsOffCatalogue(database: DatabaseHandle): Promise<string[]> {
  const problems: string[] = [];
  for (const [log, table] of LOG_TABLES) {
    const rows = await database.query<{ event_type: string; payload: unknown }>(`catalogue-check-${log}`, `select event_type, payload from ${table}`, []).catch(() => []);
    for (const row of rows) {
      const definition = findEvent(log, row.event_type);
      if (!definition) continue;
      const checked = definition.payload.safeParse(row.payload);
      if (!checked.success) {
        const issue = checked.error.issues[0]!;
        problems.push(`${log} ${row.event_type}: ${issue.path.join(".") || "(payload)"}: ${issue.message} in ${JSON.stringify(row.payload).slice(0, 200)}`);
      }
    }
  }
  return problems;
}
