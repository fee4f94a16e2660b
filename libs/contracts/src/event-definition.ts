import type { z, ZodType } from "zod";

/**
 * The logs an event can go to: each is a stream of im.evt.<log>.<aggregate id>.<event type>
 * subjects; the vault's (IM_VAULT) has two tokens for the aggregate, im.evt.vault.<kind>.<id>.<event type>.
 */
export type EventLog = "intent" | "portfolio" | "agent" | "vault";

/**
 * One event, spelled once: its name (a NATS subject token), the logs it goes to and the schema of
 * its payload. The name and the schema are type parameters, so a writer (newEvent in libs/bus)
 * and a subscriber (subscribe in libs/bus) take both from the definition: a misspelled name or a
 * payload of the wrong shape does not compile.
 */
export interface EventDefinition<Name extends string = string, Schema extends ZodType = ZodType, Log extends EventLog = EventLog> {
  readonly name: Name;
  /** Which logs (and so which SSE streams / im.evt.<log> subjects) carry it. */
  readonly logs: readonly Log[];
  readonly payload: Schema;
  /** Written by another service and appended to an intent's log through the system-event path (system-events.ts). */
  readonly system: boolean;
  readonly description: string;
}

/** What a writer gives: the payload schema's input. */
export type EventPayload<E> = E extends EventDefinition<string, infer Schema> ? z.input<Schema> : never;
/** What a reader gets: the payload after the schema parsed it. */
export type EventData<E> = E extends EventDefinition<string, infer Schema> ? z.output<Schema> : never;
/** The literal name of a definition (or the union of a list's names). */
export type EventName<E> = E extends EventDefinition<infer Name> ? Name : never;

export function defineEvent<const Name extends string, Schema extends ZodType, const Log extends EventLog, const System extends boolean = false>(definition: {
  name: Name;
  logs: readonly Log[];
  payload: Schema;
  system?: System;
  description: string;
}): EventDefinition<Name, Schema, Log> & { readonly system: System } {
  return { ...definition, system: (definition.system ?? false) as System };
}

/** A group's names by key (the old `xxxEventTypes` maps, derived so a name is still spelled once). */
export function eventNames<const Group extends Record<string, EventDefinition>>(group: Group): { readonly [K in keyof Group]: Group[K]["name"] } {
  return Object.fromEntries(Object.entries(group).map(([key, definition]) => [key, definition.name])) as { readonly [K in keyof Group]: Group[K]["name"] };
}
