import { sql } from "drizzle-orm";
import { isAppError } from "@intentmesh/contracts";
import { rowsOf } from "@intentmesh/db";
import { Sweeper } from "@intentmesh/service";
import type { IntentsContext } from "../kernel/context";
import { makeCheckpoint } from "./handlers";

export interface CheckpointSchedule {
  /** A checkpoint every this many events (RFC 0019 3.1 default 100); also the most one covers. */
  batchEvents: number;
  /** ... or once the oldest event not checkpointed is this old (RFC default 5 minutes). */
  maxAgeMs: number;
  /** How often the sweeper looks. */
  intervalMs: number;
}

export const DEFAULT_CHECKPOINT_SCHEDULE: CheckpointSchedule = { batchEvents: 100, maxAgeMs: 300_000, intervalMs: 30_000 };

/**
 * Creates the scheduled checkpoints (RFC 0019 3.1): for every intent with events after its last
 * checkpoint, one per `batchEvents` events, or over what is pending once the oldest pending event
 * is `maxAgeMs` old, whichever comes first; never over an empty batch. Time comes from the
 * injected clock. Safe with several replicas: each checkpoint is made under a per-intent advisory
 * lock that a sweeper only tries (an intent another replica is checkpointing is skipped), and the
 * triggers are read again under that lock.
 */
export class CheckpointSweeper extends Sweeper {
  private warnedUnsigned = false;

  constructor(
    private readonly ctx: IntentsContext,
    private readonly schedule: CheckpointSchedule = DEFAULT_CHECKPOINT_SCHEDULE,
    private readonly intentsPerPass = 500,
  ) {
    super(schedule.intervalMs, ctx.logger, "checkpoint sweep");
  }

  /** One pass; returns how many checkpoints it made. Tests call it directly with a manual clock. */
  async sweep(): Promise<number> {
    const now = this.ctx.clock.now();
    const cutoff = new Date(now.getTime() - this.schedule.maxAgeMs);
    // Intents whose pending events reach a trigger. A scan of the intents, joined to their last
    // checkpoint and, for the time trigger, their first pending event (both by index).
    const due = rowsOf<{ id: string }>(
      await this.ctx.db.execute(sql`
        select i.id from intents.intents i
        left join lateral (select max(c.last_sequence) as last from intents.checkpoints c where c.intent_id = i.id) c on true
        where i.event_seq > coalesce(c.last, 0)
          and (i.event_seq - coalesce(c.last, 0) >= ${this.schedule.batchEvents}
               or exists (select 1 from intents.events e
                          where e.intent_id = i.id and e.sequence = coalesce(c.last, 0) + 1 and e.created_at <= ${cutoff}))
        order by i.id
        limit ${this.intentsPerPass}`),
    );
    let made = 0;
    for (const { id } of due) {
      try {
        // A backlog of several batches is checkpointed batch after batch.
        while (await makeCheckpoint(this.ctx, id, { kind: "schedule", batchEvents: this.schedule.batchEvents, maxAgeMs: this.schedule.maxAgeMs, now })) made += 1;
      } catch (error) {
        if (isAppError(error) && error.code === "SIGNING_UNAVAILABLE") {
          if (!this.warnedUnsigned) this.ctx.logger.warn({ err: error }, "checkpoints: the server identity cannot sign; scheduled checkpoints wait");
          this.warnedUnsigned = true;
          return made;
        }
        // One intent's broken log (reported by makeCheckpoint) does not hold back the others.
        if (isAppError(error) && error.code === "LOG_TAMPERED") continue;
        throw error;
      }
    }
    return made;
  }
}
