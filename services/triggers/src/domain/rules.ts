import { CronExpressionParser } from "cron-parser";
import { EventCondition, ScheduleCondition, agentEvents, errors, intentEvents, triggerEventAliases as alias } from "@intentmesh/contracts";
import type { z } from "zod";

/**
 * The pure rules of triggers (RFC-0017): when a schedule is due, which events an event trigger
 * answers, how a template becomes an intent's fields. No clock, no database: every time is given.
 */

export type TriggerType = "schedule" | "event";

/** A condition, checked against its type's schema; a refusal names the field (400 VALIDATION_FAILED). */
export function parseCondition(type: TriggerType, condition: unknown): ScheduleCondition | EventCondition {
  const schema: z.ZodType = type === "schedule" ? ScheduleCondition : EventCondition;
  const parsed = schema.safeParse(condition);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ["condition", ...issue.path.map(String)].join(".");
    throw errors.validation(`${field}: ${issue.message}`, parsed.error.issues);
  }
  if (type === "schedule") {
    const schedule = parsed.data as ScheduleCondition;
    if (schedule.cron && !schedule.at) checkCron(schedule.cron, schedule.timezone);
    return schedule;
  }
  return parsed.data as EventCondition;
}

/** §2.1: a standard 5-field expression (names of months and days allowed), evaluated in the time zone. */
export function checkCron(expression: string, timezone: string): void {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) throw errors.validation(`condition.cron: ${JSON.stringify(expression)} is not a 5-field cron expression (minute hour day-of-month month day-of-week)`);
  try {
    CronExpressionParser.parse(`0 ${fields.join(" ")}`, { tz: timezone, strict: false });
  } catch (error) {
    throw errors.validation(`condition.cron: ${JSON.stringify(expression)} is not a valid cron expression: ${(error as Error).message}`);
  }
}

/** A condition's time: one without an offset (Python's isoformat() of a naive datetime) is UTC, whatever the process's zone. */
export const utc = (value: string): Date => new Date(/(?:Z|[+-]\d\d:?\d\d)$/i.test(value) ? value : `${value}Z`);

/**
 * The first due time of a schedule strictly after `after`, inside its window (§2.2 starts_at,
 * ends_at), or null when there is none. `anchor` is where an interval counts from when the
 * condition has no starts_at (the trigger's creation).
 */
export function nextDueAfter(condition: ScheduleCondition, after: Date, anchor: Date): Date | null {
  const starts = condition.starts_at ? utc(condition.starts_at) : null;
  const ends = condition.ends_at ? utc(condition.ends_at) : null;
  const within = (t: Date | null) => (t && (!ends || t.getTime() <= ends.getTime()) ? t : null);
  if (condition.at) {
    const at = utc(condition.at);
    if (at.getTime() <= after.getTime()) return null;
    if (starts && at.getTime() < starts.getTime()) return null;
    return within(at);
  }
  if (condition.interval_seconds) {
    const period = condition.interval_seconds * 1000;
    const origin = (starts ?? anchor).getTime();
    const k = after.getTime() < origin ? 0 : Math.floor((after.getTime() - origin) / period) + 1;
    return within(new Date(origin + k * period));
  }
  // Cron: from just before starts_at when that is later, so a time exactly at starts_at counts.
  const from = starts && starts.getTime() - 1 > after.getTime() ? new Date(starts.getTime() - 1) : after;
  const expression = CronExpressionParser.parse(`0 ${condition.cron!.trim()}`, { currentDate: from, tz: condition.timezone, strict: false });
  return within(expression.next().toDate());
}

/**
 * Misfire policy (§2.2, "fires on the next evaluation cycle; missed firings are not
 * retroactively created"): a schedule found due at `now` fires once for its due time `due`, and
 * every other due time that passed while no replica ran is skipped; the next is the first after
 * `now`. Returns that next due time and how many due times were coalesced into this firing.
 */
export function afterFiring(condition: ScheduleCondition, due: Date, now: Date, anchor: Date): { next: Date | null; missed: number } {
  let missed = 0;
  let t = nextDueAfter(condition, due, anchor);
  while (t && t.getTime() <= now.getTime() && missed < 1000) {
    missed += 1;
    t = nextDueAfter(condition, t, anchor);
  }
  if (t && t.getTime() <= now.getTime()) t = nextDueAfter(condition, now, anchor);
  return { next: t, missed };
}

/** A one-time schedule (§2.3 `at`) disables itself once fired. */
export const isOneTime = (condition: ScheduleCondition): boolean => Boolean(condition.at);

/** `*` matches any run of characters; everything else literally (§3.1 glob patterns). */
export function globMatch(pattern: string, value: string): boolean {
  const re = new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`, "s");
  return re.test(value);
}
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** An event a trigger may answer: an intent's (IM_INTENTS) or an agent's lifecycle (IM_REGISTRY, intent_id null). */
export interface ObservedEvent {
  id: string;
  intent_id: string | null;
  event_type: string;
  actor: string;
  payload: Record<string, unknown>;
  created_at: string;
}

/**
 * The names an event answers to: its own event type, and the RFC's name for it (§3.2), so
 * `intent.created`, `intent.state_changed`, `intent.resolved` (completed), `intent.failed`
 * (abandoned), `lease.claimed`, `lease.expired`, `trigger.fired`, `agent.registered`,
 * `agent.status_changed` and `agent.dead` all work.
 */
export function eventNames(event: Pick<ObservedEvent, "event_type" | "payload">): string[] {
  const names = [event.event_type];
  const p = event.payload;
  switch (event.event_type) {
    case intentEvents.created.name:
      names.push(alias.intentCreated);
      break;
    case intentEvents.statusChanged.name:
      names.push(alias.intentStateChanged);
      if (p.to === "completed") names.push(alias.intentResolved);
      if (p.to === "abandoned") names.push(alias.intentFailed);
      break;
    case intentEvents.leaseAcquired.name:
      names.push(alias.leaseClaimed);
      break;
    case intentEvents.leaseReleased.name:
      if (p.reason === "expired") names.push(alias.leaseExpired);
      break;
    case agentEvents.lifecycle.name:
      names.push(alias.agentStatusChanged);
      if (p.reason === "registered" || p.reason === "re_registered") names.push(alias.agentRegistered);
      if (p.new_status === "dead") names.push(alias.agentDead);
      break;
  }
  return names;
}

/** What a filter is matched against: the payload, plus the RFC's keys (§3.2) derived from it. */
export function eventFacts(event: Pick<ObservedEvent, "id" | "intent_id" | "event_type" | "actor" | "payload">): Record<string, unknown> {
  const p = event.payload;
  const facts: Record<string, unknown> = { ...p, event_id: event.id, event_type: event.event_type, actor: event.actor };
  if (event.intent_id) facts.intent_id = event.intent_id;
  if (event.event_type === intentEvents.statusChanged.name) {
    facts.from_state = p.from;
    facts.to_state = p.to;
  }
  if (event.event_type === agentEvents.lifecycle.name) {
    facts.from_status = p.previous_status;
    facts.to_status = p.new_status;
  }
  return facts;
}

/** §3.1: the event is one the condition listens for, and every filter key matches (a string value may be a glob; a dotted key reaches into objects). */
export function eventMatches(condition: EventCondition, event: Pick<ObservedEvent, "id" | "intent_id" | "event_type" | "actor" | "payload">): boolean {
  if (!eventNames(event).some((name) => globMatch(condition.event, name))) return false;
  if (!condition.filter) return true;
  const facts = eventFacts(event);
  return Object.entries(condition.filter).every(([key, expected]) => {
    const actual = lookup(facts, key);
    if (typeof expected === "string") return (typeof actual === "string" || typeof actual === "number" || typeof actual === "boolean") && globMatch(expected, String(actual));
    return actual === expected;
  });
}

function lookup(root: Record<string, unknown>, path: string): unknown {
  if (path in root) return root[path];
  let node: unknown = root;
  for (const part of path.split(".")) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

const EXPRESSION = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}$/;

/**
 * §5.1 template expressions: `{{ trigger.x }}` and `{{ event.x }}`, nothing else (no code runs,
 * Security 5). A string that is one expression becomes the value itself (a number stays a
 * number); inside other text the value is written as text; an unknown name becomes null (alone)
 * or empty text.
 */
export function render(value: unknown, vars: Record<string, unknown>): unknown {
  if (typeof value === "string") {
    const whole = WHOLE.exec(value);
    if (whole) return lookup(vars, whole[1]!) ?? null;
    return value.replace(EXPRESSION, (_m, path: string) => {
      const v = lookup(vars, path);
      if (v === undefined || v === null) return "";
      return typeof v === "object" ? JSON.stringify(v) : String(v);
    });
  }
  if (Array.isArray(value)) return value.map((v) => render(v, vars));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v, vars)]));
  return value;
}

/** Deduplication (§6) as a count: whether one more intent may be open, given how many are. */
export function mayOpenAnother(mode: "allow" | "skip" | "queue", maxConcurrent: number | null, open: number): boolean {
  if (mode === "allow" && maxConcurrent === null) return true;
  return open < (maxConcurrent ?? 1);
}

