/**
 * The catalogue's routes as a dispatch table (issue 32): a request is matched by splitting its
 * path once and comparing segments, instead of express's router trying a regular expression per
 * layer. It answers exactly the route express would pick, or nothing; anything it is not sure of
 * (a path express reads in a way of its own) it leaves to express, which then serves it as always.
 *
 * What express does, and the table mirrors (express 5, router 2, path-to-regexp 8, app.ts's
 * mounting: API prefix, then one router per first segment, then the route):
 * - paths are case-insensitive (the router's default), compared as written (a percent-encoded
 *   letter is not that letter);
 * - one trailing slash is allowed (strict routing is off): `/intents/` is `/intents`;
 * - a `{param}` is one non-empty segment, percent-decoded with decodeURIComponent;
 * - routes are tried in mounting order; a route whose method differs is passed over, except that
 *   HEAD takes the first route of the path (a GET route serves it with its GET handler).
 * Left to express: non-ASCII or unusual characters (express's URL parser takes another road for
 * them), empty segments (`//`), a malformed percent escape (express answers it while matching),
 * HEAD where the path's first route is not a GET route, and any path a route mounted in front of
 * the catalogue (`front`) takes.
 */

/** One route as the catalogue writes it: `/intents/{intent_id}/acl`. */
export interface TableRoute<T> {
  method: string;
  path: string;
  value: T;
}

export interface TableHit<T> {
  value: T;
  /** Path parameters, decoded, in path order. */
  params: Record<string, string>;
  /** The API prefix as the request wrote it (`/v1`, `/API/v1`): express's baseUrl of the API. */
  prefix: string;
  /** The prefix and the first segment as written (`/v1/intents`): express's baseUrl of the route. */
  base: string;
}

interface Entry<T> {
  /** Upper case; `*` for a front route (any method leaves the request to express). */
  method: string;
  /** Per segment: the literal in lower case, or null for a parameter. */
  segments: (string | null)[];
  names: string[];
  value: T | undefined;
}

/** What express's URL parser reads on its fast road: a path from `/`, printable ASCII, no `#`. */
const SIMPLE_URL = /^\/[\x21\x22\x24-\x7e]*$/;
/** Literal segments the table compares as text (path-to-regexp would read anything else its way). */
const PLAIN_LITERAL = /^[A-Za-z0-9_.~-]+$/;
const PARAM = /^\{(\w+)\}$/;

export type RouteTable<T> = (method: string, url: string) => TableHit<T> | undefined;

/**
 * The table of `routes` (in mounting order) under `prefixes`. `front`: paths (catalogue form,
 * relative to the prefixes) that express serves before the catalogue: a request to one of them
 * goes to express whatever its method.
 */
export function compileRouteTable<T>(prefixes: readonly string[], routes: readonly TableRoute<T>[], front: readonly string[] = []): RouteTable<T> {
  const lowerPrefixes = prefixes.map((prefix) => prefix.toLowerCase());
  // Buckets by segment count and first segment: a request meets only the routes of its shape.
  const buckets = new Map<string, Entry<T>[]>();
  const add = (path: string, entry: Omit<Entry<T>, "segments" | "names">): boolean => {
    const raw = path.split("/").slice(1);
    const segments: (string | null)[] = [];
    const names: string[] = [];
    for (const segment of raw) {
      const param = PARAM.exec(segment);
      if (param) {
        segments.push(null);
        names.push(param[1]!);
      } else if (PLAIN_LITERAL.test(segment)) segments.push(segment.toLowerCase());
      else return false;
    }
    if (segments[0] === null || segments[0] === undefined) return false;
    const key = `${segments.length}/${segments[0]}`;
    const bucket = buckets.get(key) ?? [];
    bucket.push({ ...entry, segments, names });
    buckets.set(key, bucket);
    return true;
  };
  for (const path of front) if (!add(path.replace(/:(\w+)/g, "{$1}"), { method: "*", value: undefined })) throw new Error(`route table: cannot compile the front path ${path}`);
  // A route the table cannot compile is left to express, and with it every route of its first
  // segment (express's router for that segment), so the order among them stays express's.
  const leftToExpress = new Set<string>();
  for (const route of routes) {
    if (!add(route.path, { method: route.method.toUpperCase(), value: route.value })) leftToExpress.add(route.path.split("/")[1]!.toLowerCase());
  }
  for (const [key, bucket] of buckets) {
    if (leftToExpress.has(key.slice(key.indexOf("/") + 1))) buckets.delete(key);
    else if (bucket.every((entry) => entry.method === "*")) buckets.delete(key);
  }

  return (method, url) => {
    if (!SIMPLE_URL.test(url)) return undefined;
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    const lower = path.toLowerCase();
    let prefixLength = -1;
    for (const prefix of lowerPrefixes) {
      if (lower.startsWith(prefix) && lower.charCodeAt(prefix.length) === 0x2f /* / */) {
        prefixLength = prefix.length;
        break;
      }
    }
    if (prefixLength === -1) return undefined;
    const segments = path.slice(prefixLength + 1).split("/");
    // One trailing slash is the same path (strict routing off); more, or an empty segment
    // elsewhere, express reads its own way.
    if (segments.length > 1 && segments[segments.length - 1] === "") segments.pop();
    const first = segments[0]!.toLowerCase();
    const bucket = buckets.get(`${segments.length}/${first}`);
    if (!bucket) return undefined;
    for (const segment of segments) if (segment === "") return undefined;
    for (const entry of bucket) {
      if (!sameShape(entry.segments, segments)) continue;
      if (entry.method === "*") return undefined;
      if (entry.method !== method) {
        // HEAD takes the path's first route; a non-GET one runs its parameter checks and then
        // lets express look further: left to express.
        if (method === "HEAD") return entry.method === "GET" ? hit(entry, segments, path, prefixLength) : undefined;
        continue;
      }
      return hit(entry, segments, path, prefixLength);
    }
    return undefined;
  };
}

function sameShape(pattern: (string | null)[], segments: string[]): boolean {
  for (let i = 1; i < pattern.length; i++) {
    const literal = pattern[i];
    if (literal !== null && literal !== segments[i]!.toLowerCase()) return false;
  }
  return true;
}

function hit<T>(entry: Entry<T>, segments: string[], path: string, prefixLength: number): TableHit<T> | undefined {
  // Without a prototype, as path-to-regexp makes express's req.params.
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  let name = 0;
  for (let i = 0; i < segments.length; i++) {
    if (entry.segments[i] !== null) continue;
    const value = decodeSegment(segments[i]!);
    if (value === undefined) return undefined;
    params[entry.names[name++]!] = value;
  }
  return { value: entry.value as T, params, prefix: path.slice(0, prefixLength), base: path.slice(0, prefixLength + 1 + segments[0]!.length) };
}

/** decodeURIComponent as express applies it; undefined for a malformed escape (express answers that itself). */
function decodeSegment(segment: string): string | undefined {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
