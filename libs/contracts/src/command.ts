import { z } from "./zod";
import { Uuid } from "./common";
import type { ErrorCode } from "./error-catalogue";

/**
 * A bus command, as the catalogue declares it: the one definition its handler, its callers and its
 * REST routes share (the shape of Temporal's `defineQuery<T>`: the definition carries the type).
 *
 * - `input`: what a request carries; the serving side parses it before the handler runs.
 * - `output`: what a success answers. A handler returning another shape does not compile
 *   (HandlersOf in libs/service), `BusClient.request` returns its type, a route documents it,
 *   and test buses hold every answer to it at run time.
 * - `errors`: the codes it may answer besides the ones any command may (COMMON_ROUTE_ERRORS);
 *   its routes document them, and test buses turn any other code into a 500.
 *
 * Commands are request/reply on `im.<service>.<verb>`, served by a queue group per service so
 * replicas share the load.
 */
export interface CommandDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly subject: string;
  readonly service: string;
  readonly input: I;
  readonly output: O;
  readonly errors: readonly ErrorCode[];
}

export const command = <I extends z.ZodType, O extends z.ZodType>(service: string, verb: string, input: I, output: O, errors: readonly ErrorCode[] = []): CommandDef<I, O> => ({
  subject: `im.${service}.${verb}`,
  service,
  input,
  output,
  errors,
});

/** What a caller sends (before the serving side's parse fills defaults). */
export type CommandInput<C extends CommandDef> = z.input<C["input"]>;
/** What a handler receives: the input parsed. */
export type ParsedInput<C extends CommandDef> = z.output<C["input"]>;
/** What a success answers, as the caller reads it. */
export type CommandOutput<C extends CommandDef> = z.output<C["output"]>;
/**
 * What a handler must return: the output schema's input side, with the named fields of every
 * object and no index signature. Output objects are `passthrough` (a later field is not a break),
 * so their inferred type also admits any other key; a handler is held to the named ones only.
 */
export type CommandResult<C extends CommandDef> = NamedFields<z.input<C["output"]>>;

export type NamedFields<T> = T extends readonly (infer E)[]
  ? NamedFields<E>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : number extends K ? never : K]: NamedFields<T[K]> }
    : T;

export const IntentRef = z.object({ intent_id: Uuid });
/** If-Match, already parsed by the gateway: null when the header was absent. */
export const IfMatch = z.object({ if_match: z.number().int().nullable() });
