// Every type here is derived from the route catalogue (libs/contracts/src/api) through
// `import type`: erased at build time, so no schema and no server code reaches a bundle. When a
// route changes in the catalogue, its SDK method's types change with it; nothing is restated.
import type { ErrorCode, OperationId, ResponseOf, RouteOf, z } from "@intentmesh/contracts";

export type { ErrorCode, OperationId, ResponseOf };

/** The command input of an operation, as a client may write it (zod input types). */
type CommandInput<Id extends OperationId> = z.input<RouteOf<Id>["command"]["input"]>;

/** `"/intents/{intent_id}/leases/{lease_id}"` -> `"intent_id" | "lease_id"`. */
export type PathParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | PathParamNames<Rest> : never;

type PathParamsOf<Id extends OperationId> = { [K in PathParamNames<RouteOf<Id>["path"]>]: string };

type LiftedOf<Id extends OperationId> = RouteOf<Id> extends { liftFromBody: readonly (infer L extends string)[] } ? { [K in L & keyof CommandInput<Id>]: CommandInput<Id>[K] } : unknown;

/** The JSON body an operation takes (never when it takes none). */
export type BodyOf<Id extends OperationId> = RouteOf<Id> extends { body: infer F extends "body" | "patches" } ? CommandInput<Id>[F & keyof CommandInput<Id>] & LiftedOf<Id> : never;

type BodyPart<Id extends OperationId> = [BodyOf<Id>] extends [never] ? unknown : {} extends BodyOf<Id> ? { body?: BodyOf<Id> } : { body: BodyOf<Id> };

/** A query value: numbers and booleans are written as text, lists joined with commas. */
export type QueryValue = string | number | boolean | readonly (string | number)[] | null | undefined;

/** The query string an operation reads (its names from the catalogue); never when it reads none. */
export type QueryOf<Id extends OperationId> = RouteOf<Id> extends { query: "query" | "query+path" }
  ? { [K in Exclude<keyof NonNullable<CommandInput<Id>["query" & keyof CommandInput<Id>]>, PathParamNames<RouteOf<Id>["path"]>>]?: QueryValue }
  : never;

type QueryPart<Id extends OperationId> = [QueryOf<Id>] extends [never] ? unknown : { query?: QueryOf<Id> };

/** If-Match: the version the write expects (a number, or the ETag as the server sent it). */
export type IfMatch = number | string;

type IfMatchPart<Id extends OperationId> = RouteOf<Id> extends { ifMatch: "required" } ? { ifMatch: IfMatch } : RouteOf<Id> extends { ifMatch: "optional" } ? { ifMatch?: IfMatch } : unknown;

type HeaderPart<Id extends OperationId> = RouteOf<Id> extends { headers: infer H extends Record<string, string> } ? { [K in keyof H & keyof CommandInput<Id>]?: NonNullable<CommandInput<Id>[K]> } : unknown;

/**
 * What a call of the operation takes: its path parameters by name (`intent_id`), `body`, `query`,
 * `ifMatch`, and the inputs the route reads from headers (`idempotency_key`).
 */
export type RequestOf<Id extends OperationId> = PathParamsOf<Id> & BodyPart<Id> & QueryPart<Id> & IfMatchPart<Id> & HeaderPart<Id>;

/** Per-call options of any operation. */
export interface CallOptions {
  /** Cancels the call (the promise rejects with an AbortError). */
  signal?: AbortSignal;
  /** X-Agent-ID for this call, instead of the client's. */
  agentId?: string;
  /** Per-attempt timeout in milliseconds, instead of the client's. */
  timeoutMs?: number;
  /**
   * The caller knows a replay of this write cannot apply it twice (e.g. a task action sent with
   * If-Match: the version moves), so the SDK may replay it after a lost response. See replay.ts.
   */
  replayable?: boolean;
}

/** A success with what came with it. */
export interface ApiResult<Id extends OperationId> {
  data: ResponseOf<Id>;
  status: number;
  /** The version from ETag, when the route sends one. */
  version: number | null;
  headers: Headers;
}

/** One method per operation of the catalogue, named by its operationId. */
export type Operations = {
  [Id in OperationId]: {} extends RequestOf<Id>
    ? (request?: RequestOf<Id>, options?: CallOptions) => Promise<ResponseOf<Id>>
    : (request: RequestOf<Id>, options?: CallOptions) => Promise<ResponseOf<Id>>;
};
