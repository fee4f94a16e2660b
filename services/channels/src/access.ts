import { appError, AppError, coordinatorCommands, errors, intentsCommands, permissionNeeded, registryCommands, type Caller, type CommandDef, type Intent } from "@intentmesh/contracts";
import { IntentWriteChecks, type WriteVerdict } from "@intentmesh/service";
import type { ChannelsContext } from "./context";
import { viewerOf, type Viewer } from "./domain/rules";
import type { ChannelRow } from "./mapping";

/** Rule 6: intent-level access for any channel operation, asked of the intents service with the caller's identity. */
export function readIntent(ctx: ChannelsContext, caller: Caller, intentId: string): Promise<Intent> {
  return ctx.client.request(intentsCommands.get, caller, { intent_id: intentId });
}

/** Every column of a channel under its ChannelRow name: a named prepared statement, since every send reads one. */
const FIND_CHANNEL_SQL = `
select id, intent_id as "intentId", task_id as "taskId", name, created_by as "createdBy", members, member_policy as "memberPolicy", audit,
       ttl_seconds as "ttlSeconds", max_messages as "maxMessages", status, created_at as "createdAt", closed_at as "closedAt",
       message_count as "messageCount", last_message_at as "lastMessageAt", closes_at as "closesAt", revision
from channels.channels where id = $1::uuid`;

/** The channel's row; 404 when there is none. `known`: the row this request already read (ChannelLookups). */
export async function findChannel(ctx: ChannelsContext, channelId: string, known?: ChannelRow): Promise<ChannelRow> {
  if (known) return known;
  const [row] = await ctx.query<ChannelRow>("channels_find", FIND_CHANNEL_SQL, [channelId]);
  if (!row) throw errors.notFound("channel", channelId);
  return row;
}

/**
 * The intent of the channel a command names, for its ACL check (none for an unknown channel: the
 * handler answers 404), read as the channel's whole row and kept for the handler of the same
 * request (`of`), which would read it again otherwise: one read per request, not two. Kept by the
 * command's input object, so nothing outlives the request.
 */
export class ChannelLookups {
  private readonly rows = new WeakMap<object, ChannelRow>();

  constructor(private readonly ctx: ChannelsContext) {}

  async intentsOf(input: { channel_id: string }): Promise<string[]> {
    const [row] = await this.ctx.query<ChannelRow>("channels_find", FIND_CHANNEL_SQL, [input.channel_id]);
    if (!row) return [];
    this.rows.set(input, row);
    return [row.intentId];
  }

  of(input: { channel_id: string }): ChannelRow | undefined {
    return this.rows.get(input);
  }
}

/**
 * Rule 6 and spec 2.11 for a message: the intent's ACL (the permission `command` needs) and its
 * governance policy, asked of the intents service in one request. Rejects with the access
 * refusal; the governance verdict is applied by the send where it always was, after the
 * channel's own rules. `channel`: a resource rule (the intent of the channel row the handler
 * read; an intent that does not exist protects nothing, as the other channel commands); else
 * the intent named in the input (its absence is the 404).
 */
export async function checkWrite(ctx: ChannelsContext, caller: Caller, command: CommandDef, intentId: string, from: "channel" | "intent_id"): Promise<WriteVerdict> {
  const needs = permissionNeeded(command);
  if (!needs) throw new Error(`${command.subject} has no access rule to check`);
  try {
    return await ctx.writes.check(caller, intentId, needs, "channel");
  } catch (error) {
    if (from === "channel" && error instanceof AppError && error.code === "INTENT_NOT_FOUND") return IntentWriteChecks.ALLOWED;
    throw error;
  }
}

export const notAMember = (agentId: string, channel: ChannelRow, what: string) =>
  appError("NOT_A_MEMBER", `${agentId} is not a member of channel ${channel.name}, whose member_policy is explicit: ${what}`, {
    agent_id: agentId,
    channel_id: channel.id,
  });

/**
 * Rule 6 for one channel: intent access is the intent's ACL, checked before every channel
 * operation (service.ts, IntentAccessChecks); here, with policy `explicit` an agent must be a
 * member (people — operators, coordinators, admins acting as themselves — may read).
 */
export async function assertChannelAccess(_ctx: ChannelsContext, caller: Caller, channel: ChannelRow): Promise<Viewer> {
  const viewer = viewerOf(caller);
  if (channel.memberPolicy === "explicit" && viewer.agentId && !viewer.admin && !channel.members.includes(viewer.agentId)) {
    throw notAMember(viewer.agentId, channel, "only members send and receive");
  }
  return viewer;
}

/**
 * Rule 7: the channel's creator, the intent's coordinators and admins change it. The intent's
 * coordinators are the coordinator and admin keys, and the agent holding the intent's live
 * coordinator lease (RFC-0013, docs/coordinators.md): asked of the intents service only when
 * neither the role nor the creator already decided.
 */
export async function assertMayChange(ctx: ChannelsContext, caller: Caller, channel: ChannelRow): Promise<void> {
  const viewer = viewerOf(caller);
  if (viewer.coordinator) return;
  const who = viewer.agentId ?? caller.actor;
  if (who === channel.createdBy) return;
  const holder = await ctx.client.request(coordinatorCommands.holder, caller, { intent_id: channel.intentId });
  if (holder.agent_id !== null && holder.agent_id === who) return;
  throw errors.forbidden(`only the creator of channel ${channel.name}, the intent's coordinator or an admin may change it`, { channel_id: channel.id, created_by: channel.createdBy });
}

/** How long an agent's role_id is reused for role addressing before the registry is asked again. */
const ROLE_TTL_MS = 5_000;
const MAX_CACHED_ROLES = 10_000;
const roles = new Map<string, { roleId: string | null; until: number }>();

/**
 * An agent's role_id from the registry, for role addressing; null for an unregistered agent.
 * Kept for a few seconds per process: every pull and read needs it, and a role_id changes only
 * when the agent registers again.
 */
export async function roleOf(ctx: ChannelsContext, caller: Caller, agentId: string): Promise<string | null> {
  const now = Date.now();
  const cached = roles.get(agentId);
  if (cached && cached.until > now) return cached.roleId;
  let roleId: string | null;
  try {
    roleId = (await ctx.client.request(registryCommands.get, caller, { agent_id: agentId })).role_id ?? null;
  } catch (error) {
    if (!(error instanceof AppError && error.status === 404)) throw error;
    roleId = null;
  }
  if (roles.size >= MAX_CACHED_ROLES) roles.clear();
  roles.set(agentId, { roleId, until: now + ROLE_TTL_MS });
  return roleId;
}
