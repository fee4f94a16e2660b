import { describe, expect, it } from "vitest";
import { createClient, isApiError } from "../src/index";

/** A fetch that answers from a script, one answer per call, and records the Idempotency-Key of each. */
function scripted(answers: Array<{ status: number; body: unknown; headers?: Record<string, string> }>) {
  const keys: Array<string | null> = [];
  const fetch = (async (_input: string | URL | Request, init?: RequestInit) => {
    keys.push(new Headers(init?.headers).get("Idempotency-Key"));
    const next = answers.shift();
    if (!next) throw new Error("no answer left in the script");
    return new Response(JSON.stringify(next.body), { status: next.status, headers: { "Content-Type": "application/json", ...next.headers } });
  }) as typeof globalThis.fetch;
  return { keys, fetch };
}

const inProgress = { status: 409, body: { code: "DISPATCH_IN_PROGRESS", message: "being sent", details: {} } };
const accepted = { status: 200, body: { dispatch_id: "d", status: "accepted", remote_intent_id: "r" } };
const dispatch = { body: { intent_id: "00000000-0000-4000-8000-000000000001", target_server: "https://peer.test" } };

describe("a keyed write answered 409 with Retry-After", () => {
  it("is sent again with the same key after the wait, and returns the answer it gets then", async () => {
    const { keys, fetch } = scripted([{ ...inProgress, headers: { "Retry-After": "0" } }, accepted]);
    const client = createClient({ baseUrl: "http://server.test", apiKey: "k", fetch, retry: { baseDelayMs: 1 } });
    const result = await client.ops.federationDispatch(dispatch);
    expect(result.remote_intent_id).toBe("r");
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBeTruthy();
    expect(keys[1]).toBe(keys[0]);
  });

  it("without Retry-After the conflict is the answer: nothing is sent again", async () => {
    const { keys, fetch } = scripted([inProgress, accepted]);
    const client = createClient({ baseUrl: "http://server.test", apiKey: "k", fetch, retry: { baseDelayMs: 1 } });
    const failure = await client.ops.federationDispatch(dispatch).catch((e: unknown) => e);
    expect(isApiError(failure, "DISPATCH_IN_PROGRESS")).toBe(true);
    expect(keys).toHaveLength(1);
  });

  it("stops after the policy's attempts and answers the conflict", async () => {
    const { keys, fetch } = scripted(Array.from({ length: 5 }, () => ({ ...inProgress, headers: { "Retry-After": "0" } })));
    const client = createClient({ baseUrl: "http://server.test", apiKey: "k", fetch, retry: { baseDelayMs: 1, attempts: 3 } });
    const failure = await client.ops.federationDispatch(dispatch).catch((e: unknown) => e);
    expect(isApiError(failure, "DISPATCH_IN_PROGRESS")).toBe(true);
    expect(keys).toHaveLength(3);
  });
});
