/** A minimal SSE client for tests: reads frames from a streaming fetch as they arrive. */
export interface SseFrame {
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

export class SseClient {
  readonly frames: SseFrame[] = [];
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  status = 0;
  private done: Promise<void> = Promise.resolve();

  static async open(url: string, headers: Record<string, string>): Promise<SseClient> {
    const client = new SseClient();
    const res = await fetch(url, { headers: { Accept: "text/event-stream", ...headers }, signal: client.controller.signal });
    client.status = res.status;
    if (res.status !== 200 || !res.body) return client;
    client.done = client.read(res.body).catch(() => undefined);
    return client;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: SseFrame = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) frame.comment = line.slice(1).trim();
          else {
            const i = line.indexOf(":");
            const field = line.slice(0, i);
            const value = line.slice(i + 1).replace(/^ /, "");
            if (field === "event" || field === "id" || field === "data") frame[field] = value;
          }
        }
        this.frames.push(frame);
        for (const w of this.waiters.splice(0)) w();
      }
    }
  }

  /** Resolves when the server has ended the stream (or the client closed it). */
  ended(): Promise<void> {
    return this.done;
  }

  /** Frames that carry an event, parsed. */
  get events(): { event: string; id: string; data: any }[] {
    return this.frames.filter((f) => f.data !== undefined).map((f) => ({ event: f.event!, id: f.id!, data: JSON.parse(f.data!) }));
  }

  async waitFor(predicate: (client: SseClient) => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`SSE condition not met in ${timeoutMs} ms; frames: ${JSON.stringify(this.frames)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}
