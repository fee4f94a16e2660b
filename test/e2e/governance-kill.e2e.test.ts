import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createLogger } from "@intentmesh/telemetry";
import { agentCaller, startTestGateway, type TestCluster } from "../support/cluster";
import { openFaultHarness, type FaultHarness } from "../support/fault-harness";
import type { Gateway } from "../../services/gateway/src/app";

// Fault test: the governance process is killed (SIGKILL) again and again while suspensions re-notify
// and time out, and started again each time. In the end every suspension has timed out once: one
// intent.suspension_expired each, each re-notification attempt once, no tracked row left waiting.
const caller = agentCaller("governance-kill");
let harness: FaultHarness;
let gateway: Gateway | undefined;
let api: TestCluster["api"];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  harness = await openFaultHarness("governance-kill", caller, { busTimeoutMs: 3000 });
  ({ gateway, api } = await startTestGateway(harness.bus, createLogger("test", "silent"), { busTimeoutMs: 3000 }));
});
afterAll(async () => {
  await gateway?.stop();
  await harness?.close();
});

describe("killing the governance service while suspensions time out", () => {
  it("loses no timeout and fires none twice", { timeout: 120_000 }, async () => {
    await Promise.all([harness.start("intents"), harness.start("governance", { SUSPENSION_TIMER_INTERVAL_MS: "50" })]);

    // 30 suspensions: a third single-attempt (1-3 s), the others re-notifying every second (2-3 attempts).
    const suspended: { id: string; attempts: number; fail: boolean }[] = [];
    for (let i = 0; i < 30; i++) {
      const intent = (await api("/intents", { body: { title: `k${i}`, status: "active" } })).body;
      const withPolicy = i % 3 !== 0;
      const attempts = withPolicy ? 2 + (i % 2) : 1;
      const fail = i % 2 === 0;
      const body = withPolicy
        ? {
            question: "q",
            response_type: "text",
            retry_policy: { max_attempts: attempts, interval_seconds: 1, escalation_ladder: [{ after_attempt: 1, channel: "pager", notify: "oncall" }], final_fallback_policy: fail ? "fail" : "complete_with_fallback" },
            fallback_value: "dflt",
          }
        : { question: "q", response_type: "text", timeout_seconds: 1 + (i % 3), fallback_policy: fail ? "fail" : "complete_with_fallback", fallback_value: "dflt" };
      const res = await api(`/intents/${intent.id}/suspend`, { body });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      suspended.push({ id: intent.id, attempts, fail });
    }

    // Kill it four times while the deadlines pass, starting it again at once each time.
    for (let k = 0; k < 4; k++) {
      await sleep(400 + k * 150);
      await harness.killAndRestart("governance", 0);
    }
    // Every deadline is at most 3 s after its suspension; wait until nothing waits any more.
    const waiting = async () => (await harness.rows<{ n: number }>(sql`select count(*)::int as n from governance.suspensions where status = 'waiting'`))[0]!.n;
    await harness.until(async () => (await waiting()) === 0, 60_000, "every suspension to time out");
    await harness.drained("governance");
    await harness.drained("intents");
    await sleep(500);

    for (const s of suspended) {
      const intent = (await api(`/intents/${s.id}`)).body;
      expect(intent.status).toBe(s.fail ? "abandoned" : "active");
      expect(intent.state._suspension.resolution).toBe("expired");
      const events = (await api(`/intents/${s.id}/events?limit=1000`)).body.events as { event_type: string; payload: any }[];
      expect(events.filter((e) => e.event_type === "intent.suspension_expired")).toHaveLength(1);
      const renotified = events.filter((e) => e.event_type === "intent.suspension_renotified").map((e) => e.payload.attempt);
      expect(renotified).toEqual(Array.from({ length: s.attempts - 1 }, (_, i) => i + 2));
      expect(events.filter((e) => e.event_type === "intent.suspension_escalated")).toHaveLength(s.attempts > 1 ? 1 : 0);
    }
  });
});
