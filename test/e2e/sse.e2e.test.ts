import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { SseClient } from "../support/sse";
import { allEvents, createIntent, keyHeader, UNKNOWN_ID } from "../support/e2e-helpers";

let cluster: TestCluster;
const open: SseClient[] = [];
beforeAll(async () => {
  cluster = await startTestCluster({ ssePingMs: 50 });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  await cluster?.stop();
});

async function subscribe(intentId: string, headers: Record<string, string> = {}, query = ""): Promise<SseClient> {
  const client = await SseClient.open(`${cluster.baseUrl}/api/v1/subscribe/intents/${intentId}${query}`, { ...keyHeader(), ...headers });
  open.push(client);
  expect(client.status).toBe(200);
  return client;
}

async function append(intentId: string, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await cluster.sdk().send("intentsAppendEvent", { intent_id: intentId, body: { event_type: `note.${tag}`, payload: { tag, i } } });
    expect(res.status).toBe(201);
  }
}

const sequences = (client: SseClient) => client.events.map((e) => e.data.sequence as number);

describe("GET /api/v1/subscribe/intents/{id}", () => {
  it("streams frames `event: <event_type>`, `id: <event id>`, `data: <event JSON>` as text/event-stream", async () => {
    const intent = await createIntent(cluster);
    const res = await fetch(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, { headers: keyHeader(), signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    expect(res?.status).toBe(200);
    expect(res?.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await res?.body?.cancel();

    const sse = await subscribe(intent.id);
    await cluster.sdk().ops.intentsPatchState({ intent_id: intent.id, ifMatch: 1, body: [{ op: "set", path: "/a", value: 1 }] });
    await append(intent.id, 1, "frame");
    await sse.waitFor((c) => c.events.length >= 2);

    const log = await allEvents(cluster, intent.id);
    const expected = log.slice(1); // after intent.created, which preceded the subscription
    const frames = sse.frames.filter((f) => f.data !== undefined);
    expect(frames).toHaveLength(2);
    frames.forEach((frame, i) => {
      expect(frame.event).toBe(expected[i]!.event_type);
      expect(frame.id).toBe(expected[i]!.id);
      expect(JSON.parse(frame.data!)).toEqual(expected[i]);
    });
    expect(frames.map((f) => f.event)).toEqual(["state_patched", "note.frame"]);
  });

  it("sends a `: ping` comment as keep-alive", async () => {
    const intent = await createIntent(cluster);
    const sse = await subscribe(intent.id);
    await sse.waitFor((c) => c.frames.some((f) => f.comment === "ping"), 2000);
    const ping = sse.frames.find((f) => f.comment === "ping")!;
    expect(ping.data).toBeUndefined();
    expect(ping.event).toBeUndefined();
  });

  it("resumes after Last-Event-ID: exactly the missed events, then live ones, in sequence order without duplicates", async () => {
    const intent = await createIntent(cluster);
    const first = await subscribe(intent.id);
    await append(intent.id, 3, "before");
    await first.waitFor((c) => c.events.length >= 3);
    expect(sequences(first)).toEqual([2, 3, 4]);
    const lastId = first.events[first.events.length - 1]!.id;
    await first.close();

    await append(intent.id, 4, "missed");
    const resumed = await subscribe(intent.id, { "Last-Event-ID": lastId });
    await resumed.waitFor((c) => c.events.length >= 4);
    await append(intent.id, 2, "live");
    await resumed.waitFor((c) => c.events.length >= 6);

    const log = await allEvents(cluster, intent.id);
    expect(sequences(resumed)).toEqual([5, 6, 7, 8, 9, 10]);
    expect(resumed.events.map((e) => e.id)).toEqual(log.slice(4).map((e) => e.id));
    expect(resumed.events.map((e) => e.event)).toEqual(["note.missed", "note.missed", "note.missed", "note.missed", "note.live", "note.live"]);
    expect(new Set(resumed.events.map((e) => e.id)).size).toBe(6);
    // Nothing more than that arrives.
    await append(intent.id, 1, "tail");
    await resumed.waitFor((c) => c.events.length >= 7);
    expect(sequences(resumed)).toEqual([5, 6, 7, 8, 9, 10, 11]);
  });

  it("resumes with ?last_event_id= as with the header", async () => {
    const intent = await createIntent(cluster);
    await append(intent.id, 5, "old");
    const log = await allEvents(cluster, intent.id);
    const resumed = await subscribe(intent.id, {}, `?last_event_id=${log[2]!.id}`);
    await resumed.waitFor((c) => c.events.length >= 3);
    await append(intent.id, 1, "live");
    await resumed.waitFor((c) => c.events.length >= 4);
    expect(sequences(resumed)).toEqual([4, 5, 6, 7]);
    const full = await allEvents(cluster, intent.id);
    expect(resumed.events.map((e) => e.id)).toEqual(full.slice(3).map((e) => e.id));
  });

  it("resuming from the newest event replays nothing and then streams live events", async () => {
    const intent = await createIntent(cluster);
    await append(intent.id, 2, "old");
    const log = await allEvents(cluster, intent.id);
    const resumed = await subscribe(intent.id, { "Last-Event-ID": log[log.length - 1]!.id });
    await append(intent.id, 1, "live");
    await resumed.waitFor((c) => c.events.length >= 1);
    expect(resumed.events.map((e) => e.event)).toEqual(["note.live"]);
    expect(sequences(resumed)).toEqual([4]);
  });

  it("answers an unknown intent with a 404 JSON error before any stream", async () => {
    const res = await fetch(`${cluster.baseUrl}/api/v1/subscribe/intents/${UNKNOWN_ID}`, { headers: { Accept: "text/event-stream", ...keyHeader() } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await res.json();
    expect(body).toMatchObject({ code: "INTENT_NOT_FOUND", message: expect.any(String), details: expect.any(Object) });
  });

  it("requires the X-API-Key (401 JSON, no stream)", async () => {
    const intent = await createIntent(cluster);
    const res = await fetch(`${cluster.baseUrl}/api/v1/subscribe/intents/${intent.id}`, { headers: { Accept: "text/event-stream" } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code?: string }).code).toBe("UNAUTHORIZED");
  });

  it("delivers all 30 rapidly appended events, in order, to each of 20 subscribers", async () => {
    const intent = await createIntent(cluster);
    const clients = await Promise.all(Array.from({ length: 20 }, () => subscribe(intent.id)));
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        cluster.sdk().send("intentsAppendEvent", { intent_id: intent.id, body: { event_type: "note.burst", payload: { i } } }).then((r) => expect(r.status).toBe(201)),
      ),
    );
    const log = (await allEvents(cluster, intent.id)).slice(1);
    expect(log).toHaveLength(30);
    await Promise.all(clients.map((c) => c.waitFor((x) => x.events.length >= 30, 10_000)));
    for (const client of clients) {
      expect(client.events.map((e) => e.id)).toEqual(log.map((e) => e.id));
      expect(sequences(client)).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));
    }
    await Promise.all(clients.map((c) => c.close()));
  });
});
