import { AppError } from "@intentmesh/contracts";

/**
 * RFC 6901 JSON pointers. A path without a leading slash is read as if it had one, so
 * "a/b" and "/a/b" name the same place. "" (or "/"-less empty) is the whole document.
 */
export function parsePointer(path: string): string[] {
  if (path === "" || path === "/") return path === "/" ? [""] : [];
  const normalized = path.startsWith("/") ? path : `/${path}`;
  return normalized
    .slice(1)
    .split("/")
    .map((token) => {
      if (/~[^01]|~$/.test(token)) throw new PointerError(`"${path}" has a ~ that is not ~0 or ~1`);
      return token.replace(/~1/g, "/").replace(/~0/g, "~");
    });
}

export function formatPointer(tokens: string[]): string {
  return tokens.map((t) => `/${t.replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}

/** A malformed pointer is the caller's mistake wherever it is met (a patch path, a lease scope): 400. */
export class PointerError extends AppError {
  constructor(message: string) {
    super("INVALID_POINTER", message);
  }
}
