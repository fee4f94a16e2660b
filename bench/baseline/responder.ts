/**
 * Baseline responder: the least a service can do per command. It answers
 * <namespace>.baseline.get on NATS (queue group, like a service) by reading one row by primary
 * key from PostgreSQL with `pg` and replying with it as JSON. No validation, no ORM, no tracing.
 *
 * Env: NATS_URL, DATABASE_URL, BUS_NAMESPACE, DATABASE_POOL_SIZE (default 10, as the services).
 */
import pg from "pg";
import { connect } from "@nats-io/transport-node";

const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const namespace = process.env.BUS_NAMESPACE ?? "bench";
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });
pool.on("error", () => undefined);

const nc = await connect({ servers: natsUrl.split(","), name: "bench-baseline-responder" });
const encoder = new TextEncoder();
const decoder = new TextDecoder();

nc.subscribe(`${namespace}.baseline.get`, {
  queue: "baseline",
  callback: (err, msg) => {
    if (err) return;
    void (async () => {
      try {
        const { id } = JSON.parse(decoder.decode(msg.data)) as { id: number };
        const { rows } = await pool.query("select id, title, state, version, updated_at from bench_baseline where id = $1", [id]);
        msg.respond(encoder.encode(JSON.stringify(rows[0] ? { ok: true, data: rows[0] } : { ok: false, error: { status: 404 } })));
      } catch (error) {
        msg.respond(encoder.encode(JSON.stringify({ ok: false, error: { status: 500, message: (error as Error).message } })));
      }
    })();
  },
});

const shutdown = async () => {
  await nc.drain().catch(() => undefined);
  await pool.end().catch(() => undefined);
  process.exit(0);
};
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
