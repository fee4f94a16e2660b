import type { ChannelRow } from "./mapping";

/** How many channel rows one process remembers for sending; past it, it starts over. */
const MAX_REMEMBERED = 10_000;

/**
 * The channel rows the send path remembers in this process, so that a message to a channel it
 * has seen costs one statement (the write) instead of two. Nothing is decided on a remembered row
 * alone: the write commits only while the row is still open and at the revision the checks saw
 * (every change of who may send bumps it, on any replica), and a refusal reached on a remembered
 * row is reached again on the row read afresh before it is answered (handlers/messages.ts
 * sendMessage). Immutable besides: the intent, the name, the creator of a channel never change.
 */
export class RememberedChannels {
  private readonly rows = new Map<string, ChannelRow>();

  get(channelId: string): ChannelRow | undefined {
    return this.rows.get(channelId);
  }

  remember(row: ChannelRow): void {
    if (this.rows.size >= MAX_REMEMBERED) this.rows.clear();
    this.rows.set(row.id, row);
  }

  forget(channelId: string): void {
    this.rows.delete(channelId);
  }
}
