import { and, eq, isNull } from "drizzle-orm";
import type { Clock, EventCondition } from "@intentmesh/contracts";
import type { Database } from "@intentmesh/db";
import { triggers } from "./db/schema";
import { eventMatches, type ObservedEvent } from "./domain/rules";

interface CachedTrigger {
  intentId: string | null;
  createdAt: number;
  condition: EventCondition;
}

/**
 * The enabled event triggers, held by each replica so that the event consumer can tell, without
 * a transaction, that an event matches none of them (most events, in a cluster with few event
 * triggers): such an event is acknowledged with no database work at all. The consumer still
 * decides under its transaction (firing.ts onIntentEvent) for every event the cache lets through.
 *
 * Freshness: a replica reloads the list when it is older than `ttlMs`, and at once after a
 * trigger is created, changed or deleted through it. So an event trigger created through another
 * replica sees the events of at most its first `ttlMs` late on this one (docs/triggers.md).
 */
export class EventTriggerCache {
  private rows: CachedTrigger[] | undefined;
  private loadedAt = 0;
  private loading: Promise<CachedTrigger[]> | undefined;
  /** Bumped by every invalidation, so a load that began before a change does not install its older list. */
  private generation = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** Forget the list: the next question reloads it (after a change made through this replica). */
  invalidate(): void {
    this.generation += 1;
    this.rows = undefined;
    this.loading = undefined;
  }

  /** Whether an enabled event trigger in force when the event happened could fire on it. */
  async couldMatch(event: ObservedEvent): Promise<boolean> {
    const at = Date.parse(event.created_at);
    return (await this.current()).some(
      (row) => (row.intentId === null || row.intentId === event.intent_id) && at >= row.createdAt && eventMatches(row.condition, event),
    );
  }

  private async current(): Promise<CachedTrigger[]> {
    const now = this.clock.now().getTime();
    if (this.rows && now - this.loadedAt < this.ttlMs) return this.rows;
    // One load at a time; concurrent questions share it.
    if (!this.loading) {
      const loading = this.load(now).finally(() => {
        if (this.loading === loading) this.loading = undefined;
      });
      this.loading = loading;
    }
    return this.loading;
  }

  private async load(now: number): Promise<CachedTrigger[]> {
    const generation = this.generation;
    const rows = await this.db
      .select({ intentId: triggers.intentId, createdAt: triggers.createdAt, condition: triggers.condition })
      .from(triggers)
      .where(and(eq(triggers.enabled, true), isNull(triggers.deletedAt), eq(triggers.type, "event")));
    const loaded = rows.map((row) => ({ intentId: row.intentId, createdAt: row.createdAt.getTime(), condition: row.condition as EventCondition }));
    if (generation === this.generation) {
      this.rows = loaded;
      this.loadedAt = now;
    }
    return loaded;
  }
}
