import { useEffect, useState } from "preact/hooks";
import { describe, isOutage } from "./session";

/**
 * Whether the server answers, as the console's own calls find it: an outage (no answer, 502,
 * 503, 504) shows the banner, and the next call that succeeds takes it away: while it is up the
 * inbox reads every 2 s and its stream reconnects within 5 s, so it recovers by itself. Other
 * failures are the error of one action.
 */
type Listener = () => void;
let down: string | null = null;
let failure: string | null = null;
const listeners = new Set<Listener>();
const notify = () => listeners.forEach((listener) => listener());

export function reportOk(): void {
  if (down !== null) {
    down = null;
    notify();
  }
}

/** Records an error: an outage sets the banner; anything else becomes the action's error message. */
export function reportError(error: unknown): void {
  // No answer at all says nothing more than the banner does; a 502/503/504 names what is down.
  if (isOutage(error)) down = (error as { status: number }).status === 0 ? "" : describe(error);
  else failure = describe(error);
  notify();
}

/** Whether the banner is up: the last call found the server not answering. */
export const isDown = (): boolean => down !== null;

/** Listens to every change of health (outside a component: the inbox store retries sooner while down). */
export function onHealthChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

export function dismissFailure(): void {
  failure = null;
  notify();
}

export function useHealth(): { down: string | null; failure: string | null } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { down, failure };
}
