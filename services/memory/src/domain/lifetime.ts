/**
 * ttl and expires_at (2.14): expires_at, when given, overrides ttl; `duration:<ISO 8601>` expires
 * that long after the write; `task_lifetime` ends with the entry's task (it needs scope.task_id).
 */

const DURATION = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** The instant `duration` (ISO 8601) after `from`; years and months are calendar ones (UTC). Undefined when malformed. */
export function addIsoDuration(from: Date, duration: string): Date | undefined {
  const m = DURATION.exec(duration);
  if (!m || duration === "P" || duration.endsWith("T")) return undefined;
  const [, y, mo, w, d, h, mi, s] = m.map((v) => (v === undefined ? 0 : Number(v))) as number[];
  const at = new Date(from.getTime());
  if (y || mo) at.setUTCFullYear(at.getUTCFullYear() + y!, at.getUTCMonth() + mo!);
  const ms = ((((w! * 7 + d!) * 24 + h!) * 60 + mi!) * 60 + s!) * 1000;
  const result = new Date(at.getTime() + ms);
  return Number.isFinite(result.getTime()) && result.getUTCFullYear() < 10000 ? result : undefined;
}

export type ExpiryResult = { ok: true; expiresAt: Date | null } | { ok: false; reason: string };

/** The expiry of an entry written at `now` with this ttl and expires_at. */
export function expiryOf(now: Date, ttl: string | null | undefined, expiresAt: string | null | undefined, taskId: string | null): ExpiryResult {
  if (ttl === "task_lifetime" && !taskId) return { ok: false, reason: "ttl task_lifetime needs scope.task_id: the entry lives as long as that task" };
  if (expiresAt) {
    const at = new Date(expiresAt);
    if (!Number.isFinite(at.getTime())) return { ok: false, reason: "expires_at is not a valid timestamp" };
    return { ok: true, expiresAt: at };
  }
  if (ttl && ttl.startsWith("duration:")) {
    const at = addIsoDuration(now, ttl.slice("duration:".length));
    if (!at) return { ok: false, reason: `ttl ${ttl} is not a usable ISO 8601 duration` };
    return { ok: true, expiresAt: at };
  }
  return { ok: true, expiresAt: null };
}
