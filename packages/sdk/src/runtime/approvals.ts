import type { Intentmesh } from "../client";
import { IntentmeshError, abortError } from "../errors";
import type { BodyOf, ResponseOf } from "../types";

export type Approval = ResponseOf<"governanceGetApproval">;

export interface ApprovalOutcome {
  approved: boolean;
  approval: Approval;
}

const DECISIONS = new Set(["governance.approval_granted", "governance.approval_denied"]);

/**
 * Asks for an approval (POST /intents/{id}/approvals) and waits for an operator's decision over
 * the intent's stream (`governance.approval_granted` / `_denied`), resuming after a lost
 * connection. Resolves `{approved, approval}`; `signal` stops waiting (the approval stays pending).
 */
export async function requestApproval(
  client: Intentmesh,
  intentId: string,
  request: NonNullable<BodyOf<"governanceCreateApproval">>,
  options: { agentId?: string; signal?: AbortSignal } = {},
): Promise<ApprovalOutcome> {
  const call = { agentId: options.agentId, signal: options.signal };
  const tail = await client.ops.intentsListEvents({ intent_id: intentId, query: { tail: "true", limit: 1 } }, call);
  const approval = await client.ops.governanceCreateApproval({ intent_id: intentId, body: request }, call);
  return waitForDecision(client, intentId, approval.id, { ...options, from: String(tail.events.at(-1)?.sequence ?? 0) });
}

/** Waits for the decision on an approval that exists (see requestApproval). */
export async function waitForDecision(
  client: Intentmesh,
  intentId: string,
  approvalId: string,
  options: { agentId?: string; signal?: AbortSignal; from?: string } = {},
): Promise<ApprovalOutcome> {
  const call = { agentId: options.agentId, signal: options.signal };
  const decided = (approval: Approval): ApprovalOutcome | undefined => (approval.status === "pending" ? undefined : { approved: approval.status === "approved", approval });
  // The log's end before the read: a decision after it is replayed by the stream, one before it is in the read.
  const from = options.from ?? String((await client.ops.intentsListEvents({ intent_id: intentId, query: { tail: "true", limit: 1 } }, call)).events.at(-1)?.sequence ?? 0);
  const now = decided(await client.ops.governanceGetApproval({ intent_id: intentId, approval_id: approvalId }, call));
  if (now) return now;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const stream = client.subscribe("intents", intentId, { from: { lastEventId: from }, signal: stop.signal, agentId: options.agentId });
    for await (const event of stream) {
      if (!DECISIONS.has(event.event) || (event.data.payload as { approval_id?: string }).approval_id !== approvalId) continue;
      const outcome = decided(await client.ops.governanceGetApproval({ intent_id: intentId, approval_id: approvalId }, call));
      if (outcome) return outcome;
    }
    if (options.signal?.aborted) throw abortError(options.signal);
    throw new IntentmeshError("NETWORK_ERROR", `the stream of intent ${intentId} ended while waiting for approval ${approvalId}`, 0);
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    stop.abort();
  }
}
