/**
 * One operation as the SDK sends it (a plain-data projection of libs/contracts/src/api-route.ts,
 * see scripts/routes-module.ts): the path template's `{names}` are filled from the request, the
 * body goes as JSON, the query as a query string, `ifMatch` as If-Match and header fields as
 * their headers.
 */
export interface RouteSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Under /api/v1, with `{name}` path parameters. */
  path: string;
  /** The command input field the JSON body becomes ("patches" for a state patch). */
  body?: "body" | "patches";
  /** Request fields sent inside the body although the command keeps them beside it (POST /tasks). */
  liftFromBody?: readonly string[];
  query?: "query" | "query+path";
  ifMatch?: "required" | "optional";
  /** Request field -> header name. */
  headers?: Readonly<Record<string, string>>;
  /** Status of a success. */
  status: number;
}
