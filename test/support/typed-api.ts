import { routeById, type OperationId, type ResponseOf } from "@intentmesh/contracts";
import type { ApiInit, TestCluster } from "./cluster";

export interface OperationRequest {
  /** The path template's `{names}`. */
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean>;
  body?: unknown;
  key?: ApiInit["key"];
  headers?: Record<string, string>;
}

export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export interface OperationResponse<Id extends OperationId> {
  status: number;
  headers: Headers;
  /** The success body, typed by the catalogue's response schema; throws with the error body otherwise. */
  ok(): ResponseOf<Id>;
  /** The error body; throws when the call succeeded. */
  error(): ErrorBody;
}

/**
 * A client of the REST API generated from the route catalogue (libs/contracts/src/api): an
 * operation is called by its operationId with its path parameters, and its success body has the
 * type of the route's response schema, so tests read typed fields instead of `any`.
 */
export function typedApi(api: TestCluster["api"]) {
  return async <Id extends OperationId>(operationId: Id, request: OperationRequest = {}): Promise<OperationResponse<Id>> => {
    const route = routeById(operationId);
    const path = route.path.replace(/\{(\w+)\}/g, (_: string, name: string) => {
      const value = request.params?.[name];
      if (value === undefined) throw new Error(`${operationId}: the path parameter ${name} is missing`);
      return encodeURIComponent(value);
    });
    const query = request.query ? `?${new URLSearchParams(Object.entries(request.query).map(([name, value]): [string, string] => [name, String(value)]))}` : "";
    const res = await api(`${path}${query}`, { method: route.method.toUpperCase(), body: request.body, key: request.key, headers: request.headers });
    const success = res.status >= 200 && res.status < 300;
    return {
      status: res.status,
      headers: res.headers,
      ok: () => {
        if (!success) throw new Error(`${operationId} answered ${res.status}: ${JSON.stringify(res.body)}`);
        return res.body as ResponseOf<Id>;
      },
      error: () => {
        if (success) throw new Error(`${operationId} succeeded with ${res.status}; an error was expected`);
        return res.body as ErrorBody;
      },
    };
  };
}
