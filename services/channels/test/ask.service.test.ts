import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectApiError as expectError } from "../../../test/support/service-harness";
import { uniqueTag } from "../../../test/support/e2e-helpers";
import { registerAgent, startChannelsHarness, type Agent, type ChannelsHarness } from "./harness";

/**
 * POST /channels/{id}/ask (RFC 0021's ask(), issue 31 part 2): its timeout and its refusals, the
 * channels service's own rules, through the typed client of the route catalogue; intents (the
 * intent's ACL) and the registry (X-Agent-ID bindings) run beside it. The answered ask (seen over
 * SSE) and the MCP tool stay in test/e2e/channel-ask.e2e.test.ts.
 */
let harness: ChannelsHarness;
beforeAll(async () => {
  harness = await startChannelsHarness();
});
afterAll(async () => {
  await harness?.stop();
});

const agent = (): Promise<Agent> => registerAgent(harness, "ask");

async function setting() {
  const intent = (await harness.api("intentsCreate", { body: { title: "an intent", status: "active" } })).ok();
  const [asker, answerer, outsider] = [await agent(), await agent(), await agent()];
  const channel = (await harness.api("channelsCreate", { params: { intent_id: intent.id }, body: { name: uniqueTag("c"), member_policy: "explicit", members: [asker.id, answerer.id] } })).ok();
  return { channel, asker, answerer, outsider };
}
const ask = (channelId: string, who: Pick<Agent, "as">, body: Record<string, unknown>) => harness.api("channelsAsk", { ...who.as, params: { channel_id: channelId }, body });
const messages = async (channelId: string) => (await harness.api("channelsListMessages", { params: { channel_id: channelId }, query: { limit: 1000 } })).ok();

describe("POST /channels/{id}/ask", () => {
  it("504 RESPONSE_TIMEOUT naming the request when no response comes in time; the request stays, and expires", async () => {
    const { channel, asker, answerer } = await setting();
    const refused = expectError(await ask(channel.id, asker, { to: answerer.id, payload: { q: 1 }, timeout: 1 }), 504, "RESPONSE_TIMEOUT");
    expect(refused.details).toMatchObject({ timeout_seconds: 1 });
    const requestId = String(refused.details.request_id);
    expect((await messages(channel.id)).map((m) => m.id)).toEqual([requestId]);
    harness.clock.advance(1_000);
    await harness.service.channels.sweeper.sweep();
    expectError(await harness.api("channelsReply", { ...answerer.as, params: { channel_id: channel.id, message_id: requestId }, body: { payload: {} } }), 409, "REQUEST_EXPIRED");
  });

  it("refuses bad asks with the catalogued code and writes nothing", async () => {
    const { channel, asker, answerer, outsider } = await setting();
    const valid = { to: answerer.id, payload: { q: 1 }, timeout: 5 };
    for (const body of [
      { ...valid, timeout: 0 },
      { ...valid, timeout: 61 },
      { ...valid, timeout: "5" },
      { ...valid, payload: undefined },
      { ...valid, to: undefined },
      { ...valid, message_type: "notify" },
      { ...valid, to: "has space" },
    ]) {
      expectError(await ask(channel.id, asker, body), 400, "VALIDATION_FAILED");
    }
    expectError(await ask(channel.id, asker, { ...valid, to: "*" }), 400, "MESSAGE_RULE_VIOLATED");
    expectError(await ask(channel.id, outsider, valid), 403, "NOT_A_MEMBER");
    expectError(await ask(channel.id, asker, { ...valid, sender: answerer.id }), 400, "VALIDATION_FAILED");
    expectError(await ask(channel.id, { as: { key: "other" } }, { ...valid, sender: asker.id }), 403, "AGENT_NOT_BOUND");
    expectError(await ask(channel.id, asker, { ...valid, payload: { api_key: "sk-live-0123456789abcdef0123" } }), 400, "CREDENTIALS_IN_MESSAGE");
    expectError(await ask("00000000-0000-4000-8000-000000000000", asker, valid), 404, "CHANNEL_NOT_FOUND");
    expect(await messages(channel.id)).toEqual([]);
  });
});
