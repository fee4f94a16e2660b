import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { createIntent } from "../../../test/support/e2e-helpers";
import { createClient, requestInput } from "../src/index";


/** Polls until the assertion holds; generous, since the whole suite shares two cores. */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 10_000, interval: 25 });
/** The third level of the retry cascade (spec 4.5): a server with a platform default policy. */
let cluster: TestCluster;
const platform = { max_attempts: 4, interval_seconds: 900, strategy: "exponential" as const, escalation_ladder: [], final_fallback_policy: "fail" as const };

beforeAll(async () => {
  cluster = await startTestCluster({ defaultRetryPolicy: platform });
});
afterAll(async () => {
  await cluster?.stop();
});

it("without a call-site policy or an agent default, the server's platform default applies", async () => {
  const intent = await createIntent(cluster);
  const agent = createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS.agent, agentId: "platform-asker" });
  const asked = requestInput(agent, intent.id, { question: "Which?", responseType: "text" });
  asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled
  let record: { id: string; retry_policy: unknown } | undefined;
  await eventually(async () => {
    // The suspension record the server keeps in the intent's state (spec 4.5): free-form JSON to the catalogue.
    record = (await cluster.sdk().ops.intentsGet({ intent_id: intent.id })).state._suspension as typeof record;
    expect(record?.id).toBeTruthy();
  });
  expect(record!.retry_policy).toMatchObject({ max_attempts: 4, interval_seconds: 900, strategy: "exponential" });
  const operator = createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS.operator });
  await operator.ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: record!.id, value: "this one" } });
  expect(await asked).toMatchObject({ value: "this one", cascade: "platform" });
});
