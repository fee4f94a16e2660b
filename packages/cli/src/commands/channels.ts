import type { Command } from "commander";
import { contextFor, parseJsonObject, parsePositiveInt, type Runtime } from "../context";
import { brief } from "../output";

export function registerChannels(program: Command, runtime: Runtime): void {
  const channels = program.command("channels").description("messages between agents on an intent's channel");
  channels
    .command("send")
    .description("send a message on a channel (as the acting agent)")
    .argument("<channel>", "channel id")
    .argument("<payload>", "the message, a JSON object")
    .option("--to <recipient>", "an agent id, role:<role_id>, or *")
    .option("--type <message_type>", "notify (default), request, response, broadcast")
    .option("--reply-to <message>", "for a response: the request's message id")
    .action(async (channelId: string, payload: string, options: { to?: string; type?: string; replyTo?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const message = await ctx.client.ops.channelsSend({
        channel_id: channelId,
        body: {
          payload: parseJsonObject(payload, "<payload>"),
          ...(options.to ? { to: options.to } : {}),
          ...(options.type ? { message_type: options.type as "notify" } : {}),
          ...(options.replyTo ? { correlation_id: options.replyTo } : {}),
        },
      });
      if (ctx.out.json) return ctx.out.data(message);
      ctx.out.line(`sent #${message.sequence} ${message.id} (${message.message_type}${message.to ? ` to ${message.to}` : ""})`);
    });

  channels
    .command("tail")
    .description("print a channel's messages as they arrive; resumable with --after <sequence>")
    .argument("<channel>", "channel id")
    .option("--after <sequence>", "start after this message sequence (0: the whole retained history)")
    .option("--count <n>", "stop after n messages")
    .action(async (channelId: string, options: { after?: string; count?: string }, command: Command) => {
      const ctx = contextFor(command, runtime);
      const count = options.count ? parsePositiveInt(options.count, "--count") : undefined;
      const stream = ctx.client.subscribe("channels", channelId, { from: options.after !== undefined ? { lastEventId: options.after } : "now", signal: runtime.interrupted });
      let seen = 0;
      for await (const { data: message } of stream) {
        seen += 1;
        if (ctx.out.json) ctx.out.data(message, true);
        else {
          const time = new Date(message.created_at).toISOString().slice(11, 19);
          ctx.out.line([ctx.out.style(time, "dim"), ctx.out.style(`#${message.sequence}`, "dim"), ctx.out.style(message.message_type, "cyan"), `${ctx.out.style(message.sender, "magenta")} → ${message.to ?? "*"}`, brief(message.payload, 100)].join("  "));
        }
        if (count !== undefined && seen >= count) return;
      }
      if (runtime.interrupted.aborted) throw new DOMException("interrupted", "AbortError");
    });
}
