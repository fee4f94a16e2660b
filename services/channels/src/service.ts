import path from "node:path";
import { fileURLToPath } from "node:url";
import { channelStream, channelsCommands as commands, streams, systemEventStream, type Clock } from "@intentmesh/contracts";
import type { Bus, OutboxRelay, RelayOptions } from "@intentmesh/bus";
import { IntentAccessChecks, IntentWriteChecks, openServiceCore } from "@intentmesh/service";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { ChannelsContext } from "./context";
import { outbox } from "./db/schema";
import { ChannelSweeper } from "./sweeper";
import { RememberedChannels } from "./remembered-channels";
import { startLifecycleConsumers } from "./lifecycle";
import { ChannelLookups } from "./access";
import { createChannel, deleteChannel, getChannel, listChannels, patchChannel } from "./handlers/channels";
import { ask, getMessage, listMessages, markRead, replyTo, sendByName, sendMessage, streamView } from "./handlers/messages";

export const MIGRATIONS_FOLDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../migrations");

export interface ChannelsServiceOptions {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  clock?: Clock;
  /** How often expiry and ttl are swept; default 1 s. */
  sweepIntervalMs?: number;
  relay?: Partial<RelayOptions>;
}

export interface ChannelsService {
  ctx: ChannelsContext;
  relay: OutboxRelay;
  sweeper: ChannelSweeper;
  stop(): Promise<void>;
}

/** Migrates the schema, ensures the streams, serves every command subject, starts the relay, the sweeper and the lifecycle consumers. */
export async function startChannelsService(options: ChannelsServiceOptions): Promise<ChannelsService> {
  const core = await openServiceCore({
    name: "channels",
    ...options,
    migrationsFolder: MIGRATIONS_FOLDER,
    streams: [channelStream, systemEventStream, streams.intents, streams.registry],
    outbox,
  });
  const { database, logger, relay } = core;
  const ctx: ChannelsContext = { db: database.db, query: database.query, clock: core.clock, logger, client: core.client, bus: core.bus, writes: new IntentWriteChecks(core.client), remembered: new RememberedChannels(), published: core.published };
  const sweeper = new ChannelSweeper(ctx, options.sweepIntervalMs ?? 1000);

  // Rule 6 with RFC-0011: every channel operation is checked against its intent's ACL first. The
  // four ways of sending check it in their handlers, with the message's governance check in the
  // same request (IntentWriteChecks), on the intent of the channel row they read anyway.
  const access = new IntentAccessChecks(core.client);
  const lookups = new ChannelLookups(ctx);
  core.serve(commands, access.wrap(commands, {
    create: (input, caller) => createChannel(ctx, input.intent_id, input.body, caller),
    list: (input, caller) => listChannels(ctx, input.intent_id, input.query, caller),
    get: (input, caller) => getChannel(ctx, input.channel_id, caller, lookups.of(input)),
    patch: (input, caller) => patchChannel(ctx, input.channel_id, input.body, caller, lookups.of(input)),
    delete: (input, caller) => deleteChannel(ctx, input.channel_id, caller, lookups.of(input)),
    send: (input, caller) => sendMessage(ctx, input.channel_id, input.body, caller),
    sendByName: (input, caller) => sendByName(ctx, input.intent_id, input.name, input.body, caller),
    listMessages: (input, caller) => listMessages(ctx, input.channel_id, input.query, caller, lookups.of(input)),
    getMessage: (input, caller) => getMessage(ctx, input.channel_id, input.message_id, caller, lookups.of(input)),
    reply: (input, caller) => replyTo(ctx, input.channel_id, input.message_id, input.body, caller),
    ask: (input, caller) => ask(ctx, input.channel_id, input.body, caller),
    streamView: (input, caller) => streamView(ctx, input.channel_id, caller, lookups.of(input)),
    markRead: (input, caller) => markRead(ctx, input.channel_id, input.message_id, caller, lookups.of(input)),
  }, (_command, input: { channel_id: string }) => lookups.intentsOf(input), ["send", "sendByName", "reply", "ask"]));
  const consumers = await startLifecycleConsumers(core.bus, ctx);
  const running = core.launch({ workers: [sweeper], running: [consumers] });
  return { ctx, relay, sweeper, stop: running.stop };
}
