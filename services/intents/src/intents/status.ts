import { appError } from "@intentmesh/contracts";
import { type IntentStatus } from "@intentmesh/contracts";

/**
 * Table 3.1 of the spec: the transitions POST /intents/{id}/status may make. Entering and
 * leaving suspended_awaiting_input happens only through suspension and its response or timeout.
 */
export const STATUS_TRANSITIONS: Readonly<Record<IntentStatus, readonly IntentStatus[]>> = {
  draft: ["active", "abandoned"],
  active: ["blocked", "completed", "abandoned"],
  blocked: ["active", "abandoned"],
  completed: [],
  abandoned: [],
  suspended_awaiting_input: [],
};

export const TERMINAL_STATUSES: readonly IntentStatus[] = ["completed", "abandoned"];

export function allowedTargets(from: IntentStatus): readonly IntentStatus[] {
  return STATUS_TRANSITIONS[from];
}

/** Throws INVALID_TRANSITION (409) naming from, to and the allowed targets unless table 3.1 permits the move. */
export function assertTransition(from: IntentStatus, to: IntentStatus): void {
  const allowed = allowedTargets(from);
  if (allowed.includes(to)) return;
  const options = allowed.length ? `it may move to ${allowed.join(", ")}` : "it is final and may not move";
  throw appError("INVALID_TRANSITION", `an intent cannot move from ${from} to ${to}; ${options}`, {
    from,
    to,
    allowed: [...allowed],
  });
}
