import { agentOf, appError, type Caller, errors, isAdmin, isCoordinatorOrAdmin, type MessageType } from "@intentmesh/contracts";

/** A 400 naming the rule of spec 2.13 / 4.7 that the message breaks. */
export const ruleViolation = (rule: string, message: string, details: Record<string, unknown> = {}) =>
  appError("MESSAGE_RULE_VIOLATED", message, { rule, ...details });

/** The request a response answers, as the type rules need it. */
export interface AnsweredRequest {
  id: string;
  channelId: string;
  messageType: string;
  sender: string;
}

/**
 * The type rules of 2.13: what `to` a message of this type ends up with, or a 400 naming the rule.
 * request: no correlation_id, `to` required (an agent or a role, not `*`); response:
 * correlation_id names a request of the same channel, `to` is that request's sender; notify: no
 * correlation_id, `to` optional; broadcast: no correlation_id, `to` is `*`.
 */
export function resolveRecipient(
  type: MessageType,
  given: { to: string | null; correlationId: string | null },
  channelId: string,
  request: AnsweredRequest | null,
): string | null {
  const { to, correlationId } = given;
  if (type !== "response" && correlationId) {
    throw ruleViolation("correlation_id", `a ${type} message takes no correlation_id; only a response names the request it answers`);
  }
  switch (type) {
    case "request":
      if (!to) throw ruleViolation("to", "a request needs `to`: an agent id or role:<role_id>");
      if (to === "*") throw ruleViolation("to", "a request goes to an agent or a role, not to * (send a broadcast instead)");
      return to;
    case "response": {
      if (!correlationId) throw ruleViolation("correlation_id", "a response needs correlation_id, the id of the request it answers");
      if (!request || request.channelId !== channelId) {
        throw ruleViolation("correlation_id", `correlation_id ${correlationId} names no message of this channel`, { correlation_id: correlationId });
      }
      if (request.messageType !== "request") {
        throw ruleViolation("correlation_id", `correlation_id ${correlationId} names a ${request.messageType} message, not a request`, { correlation_id: correlationId });
      }
      if (to && to !== request.sender) {
        throw ruleViolation("to", `a response goes to the request's sender (${request.sender}); leave out to`, { expected_to: request.sender });
      }
      return request.sender;
    }
    case "notify":
      return to ?? null;
    case "broadcast":
      if (to && to !== "*") throw ruleViolation("to", "a broadcast goes to every member: to is * (or left out)");
      return "*";
  }
}

/** Key names whose value is a credential (spec 5.8: no secrets in messages). */
const CREDENTIAL_KEY = /^(password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|apikey|x[_-]?api[_-]?key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|bearer|authorization|private[_-]?key|secret[_-]?key|session[_-]?token)$/i;
/** Values that are credentials whatever their key: PEM private keys and bearer headers. */
const CREDENTIAL_VALUE = /-----BEGIN [A-Z ]*PRIVATE KEY-----|^Bearer\s+\S{8,}/;

/**
 * The JSON pointer of the first credential in a message's payload or metadata, or null. Never
 * says the value. What is detected: docs/channels.md.
 */
export function findCredential(value: unknown, path = ""): string | null {
  if (typeof value === "string") return CREDENTIAL_VALUE.test(value) ? path || "/" : null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findCredential(item, `${path}/${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      const here = `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      if (CREDENTIAL_KEY.test(key) && item !== null && item !== "") return here;
      const found = findCredential(item, here);
      if (found) return found;
    }
  }
  return null;
}

export function refuseCredentials(parts: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(parts)) {
    const path = findCredential(value);
    if (path) {
      throw appError("CREDENTIALS_IN_MESSAGE", `${name}${path === "/" ? "" : path} looks like a credential; messages must not carry secrets (spec 5.8): pass a reference instead`, {
        field: name,
        path,
      });
    }
  }
}

/** Who a caller is on a channel: an agent (X-Agent-ID, or an agent key's principal) or a person. */
export interface Viewer {
  agentId: string | null;
  /** Operators, coordinators and admins acting as themselves: they see every message. */
  person: boolean;
  admin: boolean;
  coordinator: boolean;
}

export function viewerOf(caller: Caller): Viewer {
  const agentId = agentOf(caller);
  return { agentId, person: agentId === null, admin: isAdmin(caller), coordinator: isCoordinatorOrAdmin(caller) };
}

/**
 * Whether an agent may see a message (rules 3-5): its own, a broadcast or message to all
 * members, one addressed to it, or to its role.
 */
export function addressedTo(message: { sender: string; to: string | null }, agentId: string, roleId: string | null): boolean {
  if (message.sender === agentId) return true;
  if (message.to === null || message.to === "*" || message.to === agentId) return true;
  return roleId !== null && message.to === `role:${roleId}`;
}

/** The sender of a message: the body's, which must agree with X-Agent-ID when both are given. */
export function senderOf(caller: Caller, bodySender: string | undefined): string {
  if (caller.agent_id && bodySender && bodySender !== caller.agent_id) {
    throw errors.validation(`sender ${bodySender} contradicts X-Agent-ID ${caller.agent_id}`);
  }
  return bodySender ?? caller.agent_id ?? caller.actor;
}
