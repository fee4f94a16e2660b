/**
 * Baseline HTTP server: a minimal express app whose one route, GET /baseline/:id, sends a NATS
 * request to the baseline responder and returns its reply as JSON. No auth, no logging, no
 * validation. Together with responder.ts it is the floor of an HTTP -> NATS -> PostgreSQL read
 * on this machine, which each gateway scenario is compared to.
 *
 * Env: NATS_URL, BUS_NAMESPACE, PORT, HOST.
 */
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";

// express is a dependency of the gateway, not of the root: load the gateway's copy (same version).
const here = path.dirname(fileURLToPath(import.meta.url));
const requireFromGateway = createRequire(path.resolve(here, "../../services/gateway/package.json"));

interface Req {
  params: Record<string, string>;
}
interface Res {
  status(code: number): Res;
  json(body: unknown): void;
}
interface App {
  disable(setting: string): void;
  set(setting: string, value: unknown): void;
  get(path: string, handler: (req: Req, res: Res) => void | Promise<void>): void;
}
const express = requireFromGateway("express") as () => App & http.RequestListener;

const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const namespace = process.env.BUS_NAMESPACE ?? "bench";
const subject = `${namespace}.baseline.get`;
const nc = await connect({ servers: natsUrl.split(","), name: "bench-baseline-server" });
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const lookup = async (id: number) => {
  const msg = await nc.request(subject, encoder.encode(JSON.stringify({ id })), { timeout: 5000 });
  return JSON.parse(decoder.decode(msg.data)) as { ok: boolean; data?: unknown; error?: { status: number } };
};

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.get("/healthz", async (_req, res) => {
  try {
    const reply = await lookup(1);
    res.status(reply.ok ? 200 : 503).json(reply);
  } catch (error) {
    res.status(503).json({ error: (error as Error).message });
  }
});
app.get("/baseline/:id", async (req, res) => {
  try {
    const reply = await lookup(Number(req.params.id));
    if (reply.ok) res.json(reply.data);
    else res.status(reply.error?.status ?? 500).json(reply.error);
  } catch (error) {
    res.status(503).json({ error: (error as Error).message });
  }
});

const server = http.createServer(app);
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1");

const shutdown = async () => {
  server.close();
  server.closeAllConnections();
  await nc.drain().catch(() => undefined);
  process.exit(0);
};
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
