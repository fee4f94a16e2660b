import { agentEventTypes } from "@intentmesh/contracts";
import { sseFrame, type StreamEvent } from "./event-feed";

/**
 * The name and data the official clients route an assignment by: BaseAgent reads
 * `event: AGENT_ASSIGNED` and `data.intent_id` (CLIENTS.md, SSE). The spec leaves SSE names
 * unnamed, so the agent stream keeps its own frames and adds this one.
 */
export const CLIENT_ASSIGNMENT_EVENT = "AGENT_ASSIGNED";

/**
 * Frames of the agent stream. Every event is its usual frame (`event`, `id`, `data`: the event).
 * An `agent_assigned` event is followed, in the same write, by a second frame
 * `event: AGENT_ASSIGNED` whose data is `{intent_id, agent_id, role, event_id}`. That frame has
 * no `id:` line, so a client's Last-Event-ID stays the assignment event's own id and a resumed
 * stream replays both frames of an assignment, or neither.
 */
export function agentStreamFrame(event: StreamEvent, json?: string): string {
  const frame = sseFrame(event, json);
  if (event.event_type !== agentEventTypes.assigned) return frame;
  const payload = (event as StreamEvent & { payload?: Record<string, unknown> }).payload ?? {};
  const data = { intent_id: payload.intent_id ?? null, agent_id: payload.agent_id ?? null, role: payload.role ?? null, event_id: event.id };
  return `${frame}event: ${CLIENT_ASSIGNMENT_EVENT}\ndata: ${JSON.stringify(data)}\n\n`;
}
