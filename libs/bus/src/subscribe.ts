import type { JsMsg } from "@nats-io/jetstream";
import {
  AgentEvent,
  IntentEvent,
  PortfolioEvent,
  streams,
  VaultEvent,
  vaultStream,
  type EventData,
  type EventDefinition,
  type EventLog,
  type EventName,
} from "@intentmesh/contracts";
import type { Tx } from "@intentmesh/db";
import type { Bus } from "./connection";
import { startDurableConsumer, type DurableConsumerOptions } from "./consumer";

/** The envelope each log's events travel in (im.evt.<log>.<aggregate>.<event_type>). */
export interface LogEnvelopes {
  intent: IntentEvent;
  agent: AgentEvent;
  portfolio: PortfolioEvent;
  vault: VaultEvent;
}
const ENVELOPES = { intent: IntentEvent, agent: AgentEvent, portfolio: PortfolioEvent, vault: VaultEvent } as const;
const LOG_STREAMS: Record<EventLog, string> = { intent: streams.intents.name, agent: streams.registry.name, portfolio: streams.portfolios.name, vault: vaultStream.name };
/** The subject tokens between im.evt.<log> and the event type: the aggregate's id, and for the vault its kind too (vaultEventSubject). */
const AGGREGATE_TOKENS: Record<EventLog, string> = { intent: "*", agent: "*", portfolio: "*", vault: "*.*" };

/** An event of a definition as a subscriber gets it: the log's envelope, its name and its parsed payload typed. */
export type TypedEvent<Log extends EventLog, D> = D extends EventDefinition
  ? Omit<LogEnvelopes[Log], "event_type" | "payload"> & { event_type: EventName<D>; payload: EventData<D> }
  : never;

/**
 * What a durable consumer follows: one log, a subject filter within it, and how a message of it
 * becomes what the handler gets (null: not one of the events asked for, acknowledged unapplied).
 */
export interface EventSource<Log extends EventLog, Event> {
  readonly log: Log;
  /** The subject filter, without the bus namespace (the consumer adds it). */
  readonly filterSubject: string;
  parse(data: unknown): Event | null;
}

/** Every event of a definition on one of its logs: filter im.evt.<log>.*.<name> (vault: im.evt.vault.*.*.<name>), payload parsed with its schema. */
export function eventOn<D extends EventDefinition, Log extends D["logs"][number]>(definition: D, log: Log): EventSource<Log, TypedEvent<Log, D>> {
  return familyOn([definition], log, `im.evt.${log}.${AGGREGATE_TOKENS[log]}.${definition.name}`);
}

/**
 * Every event of a family whose names share a prefix ending in a dot (task.*): one filter
 * im.evt.<log>.*.<prefix>> for the whole family, so its events reach the consumer in log order.
 * A name under the prefix that none of the definitions has is acknowledged unapplied.
 */
export function eventFamilyOn<D extends EventDefinition, Log extends D["logs"][number]>(
  definitions: readonly D[] | Record<string, D>,
  log: Log,
  prefix: `${string}.`,
): EventSource<Log, TypedEvent<Log, D>> {
  const list = Array.isArray(definitions) ? definitions : Object.values(definitions as Record<string, D>);
  for (const definition of list) {
    if (!definition.name.startsWith(prefix)) throw new Error(`event ${definition.name} is not in the family ${prefix}*`);
  }
  return familyOn<D, Log>(list, log, `im.evt.${log}.${AGGREGATE_TOKENS[log]}.${prefix}>`);
}

function familyOn<D extends EventDefinition, Log extends EventLog>(definitions: readonly D[], log: Log, filterSubject: string): EventSource<Log, TypedEvent<Log, D>> {
  for (const definition of definitions) {
    if (!definition.logs.includes(log)) throw new Error(`event ${definition.name} does not go to the ${log} log`);
  }
  const byName = new Map<string, EventDefinition>(definitions.map((definition) => [definition.name, definition]));
  return {
    log,
    filterSubject,
    parse: (data) => {
      // Most events a family's filter delivers are of names its consumer does not ask for: those
      // are acknowledged unapplied before any schema runs (an envelope that would not parse
      // carries nothing to apply either way).
      const name = (data as { event_type?: unknown } | null)?.event_type;
      if (typeof name === "string" && !byName.has(name)) return null;
      const envelope = ENVELOPES[log].parse(data);
      const definition = byName.get(envelope.event_type);
      if (!definition) return null;
      return { ...envelope, payload: definition.payload.parse(envelope.payload) } as unknown as TypedEvent<Log, D>;
    },
  };
}

/**
 * Every event of a log, catalogued or not (clients append their own types): filter
 * im.evt.<log>.>, the envelope parsed, the payload handed over as written.
 */
export function eventsOfLog<Log extends EventLog>(log: Log): EventSource<Log, LogEnvelopes[Log]> {
  return { log, filterSubject: `im.evt.${log}.>`, parse: (data) => ENVELOPES[log].parse(data) as LogEnvelopes[Log] };
}

export interface SubscribeOptions<Event>
  extends Omit<DurableConsumerOptions<Event>, "stream" | "filterSubject" | "parse" | "handle" | "skip" | "applyAlone"> {
  /** Applies the effects inside the transaction that also records the message in the inbox. */
  handle: (tx: Tx, event: Event, msg: JsMsg) => Promise<void>;
  /** Says, before any transaction, that an event has nothing to apply (see DurableConsumerOptions.skip). */
  skip?: (event: Event) => boolean | Promise<boolean>;
  /** Applies an event whose effect is idempotent on its own, with no transaction or inbox row (see DurableConsumerOptions.applyAlone). */
  applyAlone?: (event: Event) => Promise<boolean>;
}

/**
 * An idempotent durable consumer of catalogued events (startDurableConsumer): the stream and the
 * subject filter come from the source (eventOn, eventFamilyOn, eventsOfLog; a bare definition
 * means eventOn on its first log), the handler gets the event with its payload parsed by the
 * definition's schema. A message that does not parse is a poison message (logged, terminated).
 * A durable keeps the filter it was created with: a source's filter must not change under an
 * existing durable name (subscribe.test.ts pins them).
 */
export function subscribe<D extends EventDefinition>(bus: Bus, source: D, options: SubscribeOptions<TypedEvent<D["logs"][number], D>>): Promise<{ stop(): Promise<void> }>;
export function subscribe<Log extends EventLog, Event>(bus: Bus, source: EventSource<Log, Event>, options: SubscribeOptions<Event>): Promise<{ stop(): Promise<void> }>;
export function subscribe(bus: Bus, source: EventDefinition | EventSource<EventLog, unknown>, options: SubscribeOptions<any>): Promise<{ stop(): Promise<void> }> {
  const resolved = isSource(source) ? source : eventOn(source, source.logs[0]!);
  const { handle, skip, applyAlone, ...rest } = options;
  return startDurableConsumer<unknown>(bus, {
    ...rest,
    stream: LOG_STREAMS[resolved.log],
    filterSubject: resolved.filterSubject,
    parse: (data) => resolved.parse(data),
    // Events of the filter the source does not ask for (null) are acknowledged without a transaction.
    skip: async (event) => event === null || (skip ? await skip(event) : false),
    handle: (tx, event, msg) => handle(tx, event, msg),
    ...(applyAlone ? { applyAlone: (event: unknown) => applyAlone(event) } : {}),
  });
}

const isSource = (source: EventDefinition | EventSource<EventLog, unknown>): source is EventSource<EventLog, unknown> => "filterSubject" in source;
