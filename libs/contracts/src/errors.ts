import { errorCatalogue, type ErrorCode } from "./error-catalogue";

/**
 * The one error type of intentmesh. Thrown anywhere, carried over the bus as data (toWire /
 * fromWire), turned into HTTP in one place in the gateway. `extra` holds the fields the spec
 * requires at the top level of an error body (valid_choices, current_version, the current entry).
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
  }

  toWire(): WireError {
    return { code: this.code, status: this.status, message: this.message, details: this.details, extra: this.extra };
  }

  static fromWire(wire: WireError): AppError {
    return new AppError(wire.code, wire.status, wire.message, wire.details ?? {}, wire.extra ?? {});
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
    new AppError("VALIDATION_FAILED", 400, message, { issues }),
  invalidJson: (message: string) => new AppError("INVALID_JSON", 400, message),
  payloadTooLarge: (limit: string) =>
    new AppError("PAYLOAD_TOO_LARGE", 413, `the request body is larger than the limit of ${limit}`, { limit }),
  unauthorized: (message = "a valid X-API-Key header is required") => new AppError("UNAUTHORIZED", 401, message),
  forbidden: (message: string, details: Record<string, unknown> = {}) => new AppError("FORBIDDEN", 403, message, details),
  notFound: (resource: string, id: string) =>
    new AppError(`${resource.toUpperCase()}_NOT_FOUND`, 404, `${resource} ${id} was not found`, { resource, id }),
  routeNotFound: (method: string, path: string) =>
    new AppError("ROUTE_NOT_FOUND", 404, `there is no endpoint ${method} ${path}`, { method, path }),
  preconditionRequired: (resource: string) =>
    new AppError(
      "PRECONDITION_REQUIRED",
      428,
      `this change to the ${resource} needs an If-Match header carrying the version you last read`,
    ),
  versionMismatch: (resource: string, id: string, current: number, expected: number) =>
    new AppError(
      "VERSION_MISMATCH",
      409,
      `${resource} ${id} is at version ${current}, not ${expected}`,
      { resource, id, current_version: current, expected_version: expected },
      { current_version: current },
    ),
  badIfMatch: (value: string) =>
    new AppError("INVALID_IF_MATCH", 400, `If-Match must carry an integer version such as 3, "3" or W/"3", not ${JSON.stringify(value)}`),
  unavailable: (message: string) => new AppError("SERVICE_UNAVAILABLE", 503, message),
  timeout: (subject: string) =>
    new AppError("UPSTREAM_TIMEOUT", 504, `the service behind ${subject} did not answer in time`, { subject }),
  internal: () => new AppError("INTERNAL_ERROR", 500, "the server failed to handle this request; it has been logged"),
};

/**
 * An AppError of a catalogued code: the status comes from the error catalogue, so a code and its
 * status cannot disagree and an unknown code does not type-check.
 */
export const appError = (code: ErrorCode, message: string, details: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  new AppError(code, errorCatalogue[code].status, message, details, extra);
