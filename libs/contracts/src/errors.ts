import { errorCatalogue, isErrorCode, type ErrorCode } from "./error-catalogue";

/**
 * The one error type of intentmesh. Thrown anywhere, carried over the bus as data (toWire /
 * fromWire), turned into HTTP in one place in the gateway. It is built from a catalogued code
 * only, and its HTTP status is the catalogue's: a code and its status cannot disagree, and an
 * unknown code does not type-check. `extra` holds the fields the spec requires at the top level
 * of an error body (valid_choices, current_version, the current entry).
 */
export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
    this.status = errorCatalogue[code].status;
  }

  /** The same error with its message prefixed and details added (an item of a batch, a field). */
  within(prefix: string, details: Record<string, unknown>): AppError {
    return new AppError(this.code, `${prefix}${this.message}`, { ...this.details, ...details }, this.extra);
  }

  toWire(): WireError {
    return { code: this.code, status: this.status, message: this.message, details: this.details, extra: this.extra };
  }

  /**
   * Rebuilds an error another service sent. Every service answers from the same catalogue; a
   * code this process does not know (a newer replica during a rolling upgrade) becomes a 502
   * that names it rather than a guess at its meaning.
   */
  static fromWire(wire: WireError): AppError {
    if (isErrorCode(wire.code)) return new AppError(wire.code, wire.message, wire.details ?? {}, wire.extra ?? {});
    return new AppError("UPSTREAM_ERROR", wire.message, { ...wire.details, upstream_code: wire.code, upstream_status: wire.status });
  }

  /** The HTTP body: {code, message, details} plus the spec's top-level fields. */
  toBody(): Record<string, unknown> {
    return { ...this.extra, code: this.code, message: this.message, details: this.details };
  }
}

export interface WireError {
  code: string;
  status: number;
  message: string;
  details?: Record<string, unknown>;
  extra?: Record<string, unknown>;
}

export const isAppError = (error: unknown): error is AppError => error instanceof AppError;

/** Constructors for the errors more than one module raises, so codes and statuses stay consistent. */
export const errors = {
  validation: (message: string, issues: unknown[] = []) =>
    appError("VALIDATION_FAILED", message, { issues }),
  invalidJson: (message: string) => appError("INVALID_JSON", message),
  payloadTooLarge: (limit: string) =>
    appError("PAYLOAD_TOO_LARGE", `the request body is larger than the limit of ${limit}`, { limit }),
  unauthorized: (message = "a valid X-API-Key header is required") => appError("UNAUTHORIZED", message),
  forbidden: (message: string, details: Record<string, unknown> = {}) => appError("FORBIDDEN", message, details),
  notFound: <R extends NotFoundResource>(resource: R, id: string) =>
    appError(`${resource.toUpperCase()}_NOT_FOUND` as ErrorCode, `${resource} ${id} was not found`, { resource, id }),
  routeNotFound: (method: string, path: string) =>
    appError("ROUTE_NOT_FOUND", `there is no endpoint ${method} ${path}`, { method, path }),
  preconditionRequired: (resource: string) =>
    appError("PRECONDITION_REQUIRED", `this change to the ${resource} needs an If-Match header carrying the version you last read`,
    ),
  versionMismatch: (resource: string, id: string, current: number, expected: number) =>
    appError("VERSION_MISMATCH", `${resource} ${id} is at version ${current}, not ${expected}`,
      { resource, id, current_version: current, expected_version: expected },
      { current_version: current },
    ),
  badIfMatch: (value: string) =>
    appError("INVALID_IF_MATCH", `If-Match must carry an integer version such as 3, "3" or W/"3", not ${JSON.stringify(value)}`),
  unavailable: (message: string) => appError("SERVICE_UNAVAILABLE", message),
  timeout: (subject: string) =>
    appError("UPSTREAM_TIMEOUT", `the service behind ${subject} did not answer in time`, { subject }),
  internal: () => appError("INTERNAL_ERROR", "the server failed to handle this request; it has been logged"),
};

/** An AppError of a catalogued code (the constructor, as a function). */
export const appError = (code: ErrorCode, message: string, details: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  new AppError(code, message, details, extra);

/** A resource whose absence has a catalogued `<RESOURCE>_NOT_FOUND` code. */
export type NotFoundResource = { [C in ErrorCode]: C extends `${infer R}_NOT_FOUND` ? Lowercase<R> : never }[ErrorCode];
