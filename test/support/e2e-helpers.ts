import { IntentmeshError, type BodyOf, type ErrorCode, type ResponseOf } from "@intentmesh/sdk";
import { expect } from "vitest";
import type { ApiResponse, TestCluster } from "./cluster";
import { TEST_KEYS } from "./cluster";

/**
 * What the fixtures need of their target: the typed client. A TestCluster (the whole cluster) and a
 * ServiceHarness (one service's lane) both have it, so a test file moves between lanes by its setup.
 */
export type SdkTarget = Pick<TestCluster, "sdk">;

/** Wire timestamps: ISO 8601, UTC, milliseconds, explicit +00:00 offset. */
export const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/;

/** A UUID that no intent has. */
export const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

/** A fresh, unique token for isolating list queries between tests of one file. */
export const uniqueTag = (prefix = "t") => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

/** Asserts the one error shape {code, message, details} with a given status and code. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.code }, JSON.stringify(res.body)).toEqual({ status, code });
  expect(typeof res.body.message).toBe("string");
  expect(res.body.message.length).toBeGreaterThan(0);
  expect(res.body.details).toBeTypeOf("object");
  expect(res.body.details).not.toBeNull();
}

/**
 * Awaits a typed-client call that must fail, and asserts the one error shape {code, message,
 * details} with the given status and code (like expectError for a raw response). Returns the
 * error, so a test can read its details. The SDK retries only 502/503/504 and a keyed 409 that
 * carries Retry-After, so a 4xx asserted here is the first answer, never a replay's.
 */
export async function expectRejected(promise: Promise<unknown>, status: number, code: ErrorCode): Promise<IntentmeshError> {
  let outcome: unknown;
  try {
    outcome = await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IntentmeshError);
    const failure = error as IntentmeshError;
    expect({ status: failure.status, code: failure.code }, JSON.stringify(failure.body)).toEqual({ status, code });
    expect(typeof failure.body?.message).toBe("string");
    expect(failure.body!.message.length).toBeGreaterThan(0);
    expect(failure.body!.details).toBeTypeOf("object");
    expect(failure.body!.details).not.toBeNull();
    return failure;
  }
  throw new Error(`expected a rejection with ${status} ${code}, got a success: ${JSON.stringify(outcome)}`);
}

/** The created intent, typed by the route catalogue. */
export type CreatedIntent = ResponseOf<"intentsCreate">;

/** One entry of an intent's event log, typed by the route catalogue. */
export type LoggedEvent = ResponseOf<"intentsListEvents">["events"][number];

/** The HTTP status a typed call ended with: its success status, or the status of the IntentmeshError it threw. */
export const statusOf = (call: Promise<{ status: number }>): Promise<number> =>
  call.then(
    (res) => res.status,
    (error: unknown) => {
      if (error instanceof IntentmeshError) return error.status;
      throw error;
    },
  );

/** A typed call's outcome as the status and body it answered: a success's data, or a refusal's error body. */
export const outcomeOf = (call: Promise<{ status: number; data: unknown }>): Promise<{ status: number; body: unknown }> =>
  call.then(
    (res) => ({ status: res.status, body: res.data }),
    (error: unknown) => {
      if (error instanceof IntentmeshError) return { status: error.status, body: error.body };
      throw error;
    },
  );

/** POST /intents through the typed client and returns the created intent (asserting 201). */
export async function createIntent(cluster: SdkTarget, body: Partial<BodyOf<"intentsCreate">> = {}, key: keyof typeof TEST_KEYS = "admin"): Promise<CreatedIntent> {
  // Created active: most tests work on an intent in progress (new intents start in draft, table 3.1).
  const res = await cluster.sdk(key).send("intentsCreate", { body: { title: "an intent", status: "active", ...body } });
  expect(res.status, JSON.stringify(res.data)).toBe(201);
  return res.data;
}

/** Reads the whole event log of an intent (all pages) through the typed client. */
export async function allEvents(cluster: SdkTarget, intentId: string): Promise<LoggedEvent[]> {
  const client = cluster.sdk();
  const out: LoggedEvent[] = [];
  let after = "0";
  for (;;) {
    const page = await client.ops.intentsListEvents({ intent_id: intentId, query: { after, limit: 1000 } });
    out.push(...page.events);
    if (!page.has_more || page.next_cursor == null) return out;
    after = page.next_cursor;
  }
}

/** The event types of an intent's log, oldest first. */
export async function eventTypes(cluster: SdkTarget, intentId: string): Promise<string[]> {
  return (await allEvents(cluster, intentId)).map((e) => e.event_type);
}

/** Headers for a raw fetch with the given key. */
export const keyHeader = (key: keyof typeof TEST_KEYS = "admin") => ({ "X-API-Key": TEST_KEYS[key] });

/**
 * A lease-expiry event (spec part 6): logged as lease_released, the clients' name, with the
 * reason expired, agent_dead or agent_deregistered (a release by hand says released).
 */
export const isLeaseExpiry = (event: { event_type: string; payload: { reason?: unknown } }) =>
  event.event_type === "lease_released" && ["expired", "agent_dead", "agent_deregistered"].includes(String(event.payload.reason));
