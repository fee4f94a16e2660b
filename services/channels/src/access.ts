import { eq } from "drizzle-orm";
import { AppError, errors, intentsCommands, registryCommands, type Caller, type Intent } from "@intentmesh/contracts";
import type { ChannelsContext } from "./context";
import { channels } from "./db/schema";
import { viewerOf, type Viewer } from "./domain/rules";
import type { ChannelRow } from "./mapping";

/** Rule 6: intent-level access for any channel operation, asked of the intents service with the caller's identity. */
export function readIntent(ctx: ChannelsContext, caller: Caller, intentId: string): Promise<Intent> {
  return ctx.client.request<Intent>(intentsCommands.get, caller, { intent_id: intentId });
}

export async function findChannel(ctx: ChannelsContext, channelId: string): Promise<ChannelRow> {
  const [row] = await ctx.db.select().from(channels).where(eq(channels.id, channelId));
  if (!row) throw errors.notFound("channel", channelId);
  return row;
}

export const notAMember = (agentId: string, channel: ChannelRow, what: string) =>
  new AppError("NOT_A_MEMBER", 403, `${agentId} is not a member of channel ${channel.name}, whose member_policy is explicit: ${what}`, {
    agent_id: agentId,
    channel_id: channel.id,
  });

/**
 * Rule 6 for one channel: the caller reads its intent, and with policy `explicit` an agent must
 * be a member (people — operators, coordinators, admins acting as themselves — may read).
 */
export async function assertChannelAccess(ctx: ChannelsContext, caller: Caller, channel: ChannelRow): Promise<Viewer> {
  await readIntent(ctx, caller, channel.intentId);
  const viewer = viewerOf(caller);
  if (channel.memberPolicy === "explicit" && viewer.agentId && !viewer.admin && !channel.members.includes(viewer.agentId)) {
    throw notAMember(viewer.agentId, channel, "only members send and receive");
  }
  return viewer;
}

/** Rule 7: the channel's creator, the intent's coordinators (coordinator keys) and admins change it. */
export function assertMayChange(caller: Caller, channel: ChannelRow): void {
  const viewer = viewerOf(caller);
  if (viewer.coordinator) return;
  const who = viewer.agentId ?? caller.actor;
  if (who === channel.createdBy) return;
  throw errors.forbidden(`only the creator of channel ${channel.name}, a coordinator or an admin may change it`, { channel_id: channel.id, created_by: channel.createdBy });
}

/** An agent's role_id from the registry, for role addressing; null for an unregistered agent. */
export async function roleOf(ctx: ChannelsContext, caller: Caller, agentId: string): Promise<string | null> {
  try {
    const agent = await ctx.client.request<{ role_id?: string | null }>(registryCommands.get, caller, { agent_id: agentId });
    return agent.role_id ?? null;
  } catch (error) {
    if (error instanceof AppError && error.status === 404) return null;
    throw error;
  }
}
