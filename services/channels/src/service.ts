import path from "node:path";
import { fileURLToPath } from "node:url";
import { channelStream, channelsCommands as commands, streams, systemClock, systemEventStream, type Clock } from "@intentmesh/contracts";
import { BusClient, ensureStream, OutboxRelay, serveCommand, serveHealth, type Bus, type RelayOptions } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { Logger } from "@intentmesh/telemetry";
import type { Subscription } from "@nats-io/transport-node";
import type { ChannelsContext } from "./context";
import { outbox } from "./db/schema";
import { ChannelSweeper } from "./sweeper";
import { startLifecycleConsumers } from "./lifecycle";
import { createChannel, deleteChannel, getChannel, listChannels, patchChannel } from "./handlers/channels";
import { getMessage, listMessages, markRead, replyTo, sendByName, sendMessage, streamView } from "./handlers/messages";

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
  const { bus, database, logger } = options;
  await database.migrate("channels", MIGRATIONS_FOLDER);
  await ensureStream(bus, channelStream);
  await ensureStream(bus, systemEventStream);
  await ensureStream(bus, streams.intents);
  await ensureStream(bus, streams.registry);

  const relay = new OutboxRelay(database.db, outbox, bus, logger, { name: "channels", ...options.relay });
  const ctx: ChannelsContext = {
    db: database.db,
    query: database.query,
    clock: options.clock ?? systemClock,
    logger,
    client: new BusClient(bus, 5000),
    published: () => relay.kick(),
  };
  const sweeper = new ChannelSweeper(ctx, options.sweepIntervalMs ?? 1000);

  const subs: Subscription[] = [
    serveCommand(bus, commands.create, (input, caller) => createChannel(ctx, input.intent_id, input.body, caller), logger),
    serveCommand(bus, commands.list, (input, caller) => listChannels(ctx, input.intent_id, input.query, caller), logger),
    serveCommand(bus, commands.get, (input, caller) => getChannel(ctx, input.channel_id, caller), logger),
    serveCommand(bus, commands.patch, (input, caller) => patchChannel(ctx, input.channel_id, input.body, caller), logger),
    serveCommand(bus, commands.delete, (input, caller) => deleteChannel(ctx, input.channel_id, caller), logger),
    serveCommand(bus, commands.send, (input, caller) => sendMessage(ctx, input.channel_id, input.body, caller), logger),
    serveCommand(bus, commands.sendByName, (input, caller) => sendByName(ctx, input.intent_id, input.name, input.body, caller), logger),
    serveCommand(bus, commands.listMessages, (input, caller) => listMessages(ctx, input.channel_id, input.query, caller), logger),
    serveCommand(bus, commands.getMessage, (input, caller) => getMessage(ctx, input.channel_id, input.message_id, caller), logger),
    serveCommand(bus, commands.reply, (input, caller) => replyTo(ctx, input.channel_id, input.message_id, input.body, caller), logger),
    serveCommand(bus, commands.streamView, (input, caller) => streamView(ctx, input.channel_id, caller), logger),
    serveCommand(bus, commands.markRead, (input, caller) => markRead(ctx, input.channel_id, input.message_id, caller), logger),
    serveHealth(bus, "channels", { database, relay }, logger),
  ];
  const consumers = await startLifecycleConsumers(bus, ctx);
  relay.start();
  sweeper.start();
  logger.info({ database: database.kind }, "channels service started");

  return {
    ctx,
    relay,
    sweeper,
    stop: async () => {
      for (const sub of subs) sub.unsubscribe();
      await consumers.stop();
      await sweeper.stop();
      await relay.stop();
    },
  };
}
