import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface ProxiedRequest {
  method: string;
  path: string;
  /** The upstream's status, or undefined when the proxy never got one. */
  status?: number;
  /** The answer was dropped on purpose after the server had produced it. */
  dropped: boolean;
}

/**
 * An HTTP proxy on loopback in front of a gateway, for fault tests: it can let a request reach the
 * server and then drop the answer (the server has committed, the client sees a dead connection),
 * cut every open connection (SSE streams included), and refuse service for a while.
 */
export interface CuttingProxy {
  url: string;
  readonly requests: ProxiedRequest[];
  /** The next `times` requests matching: forwarded, answered by the server in full, then the client's connection is destroyed. */
  dropAnswer(match: (method: string, path: string) => boolean, times?: number): void;
  /** Destroys every open client connection now. */
  cutAll(): void;
  /** While down, every new connection is destroyed at once (and open ones are cut). */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export async function startCuttingProxy(upstreamBaseUrl: string): Promise<CuttingProxy> {
  const upstream = new URL(upstreamBaseUrl);
  const sockets = new Set<Socket>();
  const requests: ProxiedRequest[] = [];
  const drops: { match: (method: string, path: string) => boolean; left: number }[] = [];
  let isDown = false;

  const server = http.createServer((req, res) => {
    const record: ProxiedRequest = { method: req.method ?? "GET", path: req.url ?? "/", dropped: false };
    requests.push(record);
    const rule = drops.find((d) => d.left > 0 && d.match(record.method, record.path));
    if (rule) rule.left -= 1;
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        record.status = answer.statusCode;
        if (rule) {
          // Let the server finish its answer (it has committed), then kill the client's connection.
          answer.resume();
          answer.on("end", () => {
            record.dropped = true;
            req.socket.destroy();
          });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => req.socket.destroy());
    req.pipe(out);
    res.on("close", () => out.destroy());
  });
  server.on("connection", (socket: Socket) => {
    if (isDown) return void socket.destroy();
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    dropAnswer: (match, times = 1) => void drops.push({ match, left: times }),
    cutAll,
    down: () => {
      isDown = true;
      cutAll();
    },
    up: () => {
      isDown = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}
