export { createClient, versionOf, sleep, randomKey, type ClientOptions, type Intentmesh, type RetryPolicy } from "./client";
export { IntentmeshError, OutcomeUnknownError, isApiError, type ClientErrorCode, type ErrorBody } from "./errors";
export { replaySafety, type ReplaySafety } from "./replay";
export { routes } from "./generated/routes";
export type { RouteSpec } from "./route-spec";
export type { InboxHint } from "@intentmesh/contracts";
export { readFrames, type AgentAssignedFrame, type SseFrame, type StreamData, type StreamKind, type StreamMessage, type StreamOptions } from "./sse";
export type { ApiResult, BodyOf, CallOptions, ErrorCode, IfMatch, OperationId, Operations, QueryOf, QueryValue, RequestOf, ResponseOf } from "./types";
export * from "./runtime/index";
