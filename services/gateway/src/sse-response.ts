import type { Response } from "express";
import { metrics } from "@intentmesh/telemetry";

/**
 * Turns a response into an SSE stream: the headers (no caching, no proxy buffering), the client's
 * reconnection delay, a `: ping` comment every `pingMs` while `isClosed()` is false, and the
 * intentmesh_sse_connections gauge of `kind`. Answers the function that stops the ping and takes
 * the connection off the gauge; the caller runs it once, when it ends the stream.
 */
export function startSseResponse(res: Response, kind: string, pingMs: number, isClosed: () => boolean): () => void {
  res.status(200).set({
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  res.write("retry: 2000\n\n");
  metrics.sseConnections.inc({ stream: kind });
  const ping = setInterval(() => {
    if (!isClosed()) res.write(": ping\n\n");
  }, pingMs);
  return () => {
    clearInterval(ping);
    metrics.sseConnections.dec({ stream: kind });
  };
}
