/** An intent as the fixtures keep it: its id and the version last seen. */
export interface IntentRef {
  id: string;
  version: number;
}

/**
 * The small HTTP client the benchmarks make their fixtures with (not measured): JSON in and out,
 * `expect` throws with the answer when the status is not the one wanted.
 */
export function benchApi(baseUrl: string, headers: Record<string, string>) {
  // A Content-Type of the caller's is kept (a second one in other letters would be joined to it).
  const typed = Object.keys(headers).some((name) => name.toLowerCase() === "content-type");
  const request = async (method: string, urlPath: string, body?: unknown, extraHeaders: Record<string, string> = {}) => {
    const res = await fetch(`${baseUrl}${urlPath}`, {
      method,
      headers: { ...headers, ...(body === undefined || typed ? {} : { "Content-Type": "application/json" }), ...extraHeaders },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed };
  };
  const expect = async (status: number, method: string, urlPath: string, body?: unknown) => {
    const res = await request(method, urlPath, body);
    if (res.status !== status) throw new Error(`${method} ${urlPath} answered ${res.status}, not ${status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.body as Record<string, unknown>;
  };
  return {
    request,
    expect,
    createIntent: async (title: string): Promise<IntentRef> => {
      const body = await expect(201, "POST", "/api/v1/intents", { title, status: "active", state: { phase: "start" } });
      return { id: String(body.id), version: Number(body.version) };
    },
    getIntent: async (id: string): Promise<IntentRef> => {
      const body = await expect(200, "GET", `/api/v1/intents/${id}`);
      return { id: String(body.id), version: Number(body.version) };
    },
    appendEvent: (id: string, event: unknown) => expect(201, "POST", `/api/v1/intents/${id}/events`, event),
  };
}

export type BenchApi = ReturnType<typeof benchApi>;
