/**
 * `pnpm bench:graph`: intent graph queries on a 10,000-intent graph (docs/benchmarks.md,
 * "Intent graphs"; issue 26). The shape, depth 20 and fan-out 50:
 *
 *   - depth 0: one root;
 *   - depth 1: its 50 children;
 *   - depths 2..20: 500 intents each: the first 10 intents of the depth above have 50 children
 *     each (the others are leaves); 9,551 intents in the tree;
 *   - 449 "upstream" intents outside the tree, every other one completed;
 *   - dependencies: every tree intent below depth 1 depends on its previous sibling (if any) and
 *     on one upstream intent: 18,810 dependency edges.
 *
 * The graph is seeded by SQL into the intents service's own table after the service has migrated
 * it (making 10,000 intents through the API is the write benchmarks' business; the events
 * of those creations play no part in these reads), then analyzed, as autovacuum would within a
 * minute of a bulk load. Each query is then timed sequentially over HTTP (gateway -> NATS ->
 * intents -> Postgres and back, what one agent sees), BENCH_ITERATIONS times (default 200), after
 * 20 unmeasured ones:
 *
 *   descendants_root     GET /intents/{root}/descendants?limit=1000 (walks all 9,550, answers 1,000)
 *   descendants_mid      GET /intents/{depth 10, first}/descendants?limit=1000 (4,550 descendants)
 *   descendants_leaf     GET /intents/{a depth-20 leaf}/descendants (none)
 *   ancestors_deepest    GET /intents/{depth 20}/ancestors (20)
 *   ready_wide           GET /intents/{depth 10, first}/ready (50 children, 25 ready: their upstream is completed)
 *   blocked_wide         GET /intents/{depth 10, first}/blocked (the other 25)
 *   dependents_upstream  GET /intents/{an upstream intent}/dependents (~21 dependents)
 *   graph_mid            GET /intents/{depth 19, first}/graph (51 nodes + their upstream dependencies)
 *   add_remove_dependency POST then DELETE /intents/{depth 20 leaf}/dependencies (the cycle check walks its upstream)
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import pg from "pg";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { waitForServices } from "./lib/processes";
import { startBenchCluster } from "./lib/cluster";
import { percentile } from "./lib/sse-fanout";

const iterations = Number(process.env.BENCH_ITERATIONS || 200);

const DEPTH = 20;
const FAN_OUT = 50;
const BRANCHING_PER_DEPTH = 10;
const UPSTREAM = 449;

interface Row {
  id: string;
  parent: string | null;
  deps: string[];
  status: string;
}

/** The graph described above, in creation order. */
function buildGraph() {
  const rows: Row[] = [];
  const upstream = Array.from({ length: UPSTREAM }, (_, i): Row => ({ id: randomUUID(), parent: null, deps: [], status: i % 2 === 0 ? "completed" : "active" }));
  rows.push(...upstream);
  const root: Row = { id: randomUUID(), parent: null, deps: [], status: "active" };
  rows.push(root);
  const levels: Row[][] = [[root]];
  let u = 0;
  for (let depth = 1; depth <= DEPTH; depth++) {
    const parents = depth === 1 ? [root] : levels[depth - 1]!.slice(0, BRANCHING_PER_DEPTH);
    const level: Row[] = [];
    for (const parent of parents) {
      let previous: Row | undefined;
      for (let k = 0; k < FAN_OUT; k++) {
        const deps = depth === 1 ? [] : [...(previous ? [previous.id] : []), upstream[u++ % UPSTREAM]!.id];
        const row: Row = { id: randomUUID(), parent: parent.id, deps, status: "active" };
        level.push(row);
        previous = row;
      }
    }
    levels.push(level);
    rows.push(...level);
  }
  return { rows, root, levels, upstream };
}

async function seed(db: pg.Client, rows: Row[]) {
  const at = Date.now();
  for (let i = 0; i < rows.length; i += 1000) {
    const batch = rows.slice(i, i + 1000);
    // Created a millisecond apart, in order: lists are oldest first.
    await db.query(
      `insert into intents.intents (id, title, created_by, status, constraints, state, confidence, version, created_at, updated_at, parent_intent_id, depends_on)
       select t.id, 'bench ' || t.n, 'bench', t.status, '{}'::jsonb, '{}'::jsonb, 0, 1, t.at, t.at, t.parent, t.deps::uuid[]
       from unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::uuid[], $6::text[]) as t(id, n, status, at, parent, deps)`,
      [
        batch.map((r) => r.id),
        batch.map((_, j) => i + j),
        batch.map((r) => r.status),
        batch.map((_, j) => new Date(at + i + j)),
        batch.map((r) => r.parent),
        batch.map((r) => `{${r.deps.join(",")}}`),
      ],
    );
  }
  await db.query("analyze intents.intents");
}

async function main() {
  const cluster = await startBenchCluster("graph");
  const { base, headers, services: children, gateway } = cluster;
  const db = new pg.Client({ connectionString: cluster.databaseUrl });
  try {
    await waitForServices(base, [...CLUSTER_SERVICES], [...children, gateway]);
    const load = os.loadavg()[0]!.toFixed(2);
    await db.connect();
    const { rows, root, levels, upstream } = buildGraph();
    const seedStart = performance.now();
    await seed(db, rows);
    const seedMs = Math.round(performance.now() - seedStart);
    const [{ n }] = (await db.query<{ n: number }>("select count(*)::int as n from intents.intents")).rows as [{ n: number }];
    const [{ e }] = (await db.query<{ e: number }>("select sum(cardinality(depends_on))::int as e from intents.intents")).rows as [{ e: number }];

    const get = async (url: string, expectCount?: { key: string; n: number }) => {
      const res = await fetch(`${base}/api/v1${url}`, { headers });
      const body = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
      if (expectCount && (body[expectCount.key] as unknown[]).length !== expectCount.n) {
        throw new Error(`${url}: ${(body[expectCount.key] as unknown[]).length} ${expectCount.key}, expected ${expectCount.n}`);
      }
    };
    const mid = levels[10]![0]!;
    const deepest = levels[DEPTH]![0]!;
    const leaf = levels[DEPTH]![FAN_OUT - 1]!;
    const scenarios: [string, () => Promise<void>][] = [
      ["descendants_root", () => get(`/intents/${root.id}/descendants?limit=1000`, { key: "descendants", n: 1000 })],
      ["descendants_mid", () => get(`/intents/${mid.id}/descendants?limit=1000`, { key: "descendants", n: 1000 })],
      ["descendants_leaf", () => get(`/intents/${leaf.id}/descendants`, { key: "descendants", n: 0 })],
      ["ancestors_deepest", () => get(`/intents/${deepest.id}/ancestors`, { key: "ancestors", n: DEPTH })],
      ["ready_wide", () => get(`/intents/${mid.id}/ready`)],
      ["blocked_wide", () => get(`/intents/${mid.id}/blocked`)],
      ["dependents_upstream", () => get(`/intents/${upstream[1]!.id}/dependents`)],
      ["graph_mid", () => get(`/intents/${levels[DEPTH - 1]![0]!.id}/graph`)],
      [
        "add_remove_dependency",
        async () => {
          const intent = (await (await fetch(`${base}/api/v1/intents/${leaf.id}`, { headers })).json()) as { version: number };
          const added = await fetch(`${base}/api/v1/intents/${leaf.id}/dependencies`, { method: "POST", headers: { ...headers, "if-match": String(intent.version) }, body: JSON.stringify({ dependency_id: levels[DEPTH - 1]![3]!.id }) });
          const body = (await added.json()) as { version: number };
          if (added.status !== 200) throw new Error(`add: ${added.status} ${JSON.stringify(body)}`);
          const removed = await fetch(`${base}/api/v1/intents/${leaf.id}/dependencies/${levels[DEPTH - 1]![3]!.id}`, { method: "DELETE", headers: { ...headers, "if-match": String(body.version) } });
          if (removed.status !== 200) throw new Error(`remove: ${removed.status} ${await removed.text()}`);
        },
      ],
    ];
    const results: Record<string, { p50_ms: number; p99_ms: number; max_ms: number }> = {};
    for (const [name, run] of scenarios) {
      for (let i = 0; i < 20; i++) await run();
      const times: number[] = [];
      for (let i = 0; i < iterations; i++) {
        const t = performance.now();
        await run();
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      const r = (v: number) => Math.round(v * 100) / 100;
      results[name] = { p50_ms: r(percentile(times, 50)), p99_ms: r(percentile(times, 99)), max_ms: r(times[times.length - 1]!) };
      console.error(`${name}: p50 ${results[name].p50_ms} ms, p99 ${results[name].p99_ms} ms`);
    }
    console.log(
      JSON.stringify(
        {
          date: new Date().toISOString(),
          machine: `${os.cpus().length} x ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load ${load} at start, ${os.loadavg()[0]!.toFixed(2)} at end`,
          graph: { intents: n, dependency_edges: e, depth: DEPTH, fan_out: FAN_OUT, seed_ms: seedMs },
          iterations,
          note: "a 2xx/3xx check on every request; the add_remove_dependency time is one add and one remove (plus a read of the version)",
          results,
        },
        null,
        2,
      ),
    );
  } finally {
    await db.end().catch(() => undefined);
    await cluster.stop();
  }
}

await main();
