import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IntentmeshError, type InboxHint, type Intentmesh } from "@intentmesh/sdk";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../support/cluster";

/**
 * GET /subscribe/inbox (docs/console.md): a hint each time an intent's waiting items change (a
 * suspension begins or ends, an approval is asked for or decided), on one connection for every
 * intent, and only about intents the subscriber may read (RFC-0011).
 */
let cluster: TestCluster;
const following: AbortController[] = [];
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  following.forEach((controller) => controller.abort());
  await cluster?.stop();
});

const client = (key: keyof typeof TEST_KEYS, agentId?: string): Intentmesh => cluster.sdk(key, agentId);

/** Follows a key's inbox stream; resolves once the stream is connected. */
async function follow(key: keyof typeof TEST_KEYS): Promise<InboxHint[]> {
  const hints: InboxHint[] = [];
  const controller = new AbortController();
  following.push(controller);
  await new Promise<void>((connected, failed) => {
    void (async () => {
      try {
        for await (const hint of client(key).subscribeInbox({ signal: controller.signal, onConnect: () => connected() })) hints.push(hint);
      } catch (error) {
        failed(error);
      }
    })();
  });
  return hints;
}

let owner: Intentmesh;
let asker: Intentmesh;
beforeAll(() => {
  owner = client("agent", "inbox-owner");
  asker = client("agent", "inbox-asker");
});

async function openIntent(title: string, acl?: { default_policy: "closed"; entries: [] }) {
  return owner.ops.intentsCreate({ body: { title, status: "active", ...(acl ? { acl } : {}) } });
}

describe("the inbox stream", () => {
  it("names the intent when a suspension begins and when it is answered", async () => {
    const hints = await follow("operator");
    const intent = await openIntent("inbox: a question");
    const suspended = await asker.ops.governanceSuspend({ intent_id: intent.id, body: { question: "Ship it?", response_type: "confirm", fallback_policy: "fail" } });
    await expect.poll(() => hints, { timeout: 5000 }).toContainEqual({ intent_id: intent.id, cause: "intent.suspended" });

    const suspension = suspended.state._suspension as { id: string };
    await client("operator").ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: suspension.id, value: "yes" } });
    await expect.poll(() => hints, { timeout: 5000 }).toContainEqual({ intent_id: intent.id, cause: "intent.resumed" });
  });

  it("names the intent when an approval is asked for (no log event) and when it is decided", async () => {
    const hints = await follow("operator");
    const intent = await openIntent("inbox: an approval");
    const approval = await asker.ops.governanceCreateApproval({ intent_id: intent.id, body: { action: "deploy", reason: "ship" } });
    await expect.poll(() => hints, { timeout: 5000 }).toContainEqual({ intent_id: intent.id, cause: "approval_requested" });

    await client("operator").ops.governanceApprove({ intent_id: intent.id, approval_id: approval.id, body: {} });
    await expect.poll(() => hints, { timeout: 5000 }).toContainEqual({ intent_id: intent.id, cause: "governance.approval_granted" });
  });

  it("never names an intent the subscriber may not read, while it names the others", async () => {
    const hints = await follow("operator");
    const ownerHints = await follow("admin");
    const hidden = await openIntent("inbox: closed to the operator", { default_policy: "closed", entries: [] });
    const seen = await openIntent("inbox: open");
    // The operator may not read the closed intent: the same check the stream makes.
    await expect(client("operator").ops.intentsGet({ intent_id: hidden.id })).rejects.toMatchObject({ status: 403 });

    await owner.ops.governanceCreateApproval({ intent_id: hidden.id, body: { action: "deploy" } });
    await owner.ops.governanceSuspend({ intent_id: hidden.id, body: { question: "Secret?", response_type: "confirm", fallback_policy: "fail" } });
    await asker.ops.governanceCreateApproval({ intent_id: seen.id, body: { action: "deploy" } });
    // The hints about the closed intent went out (the admin, who may read it, has them) before
    // the one the operator waits for: by then the operator's would have arrived too.
    await expect.poll(() => ownerHints, { timeout: 5000 }).toContainEqual({ intent_id: hidden.id, cause: "intent.suspended" });
    await expect.poll(() => hints, { timeout: 5000 }).toContainEqual({ intent_id: seen.id, cause: "approval_requested" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hints.filter((hint) => hint.intent_id === hidden.id)).toEqual([]);
  });

  it("is refused to a peer server's key, like every event stream", async () => {
    const stream = client("federation").subscribeInbox();
    const refused = await stream.next().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(IntentmeshError);
    expect(refused).toMatchObject({ status: 403 });
  });
});
