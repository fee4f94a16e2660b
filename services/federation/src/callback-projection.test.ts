import { describe, expect, it } from "vitest";
import { callbackTypeOf } from "./callback-projection";
import { backoffMs } from "./callback-sender";

describe("callbacks", () => {
  it("tell the origin of state changes, status changes, completion, failure and budget warnings, and of nothing else", () => {
    expect(callbackTypeOf({ event_type: "state_patched", payload: {} })).toBe("state_delta");
    expect(callbackTypeOf({ event_type: "status_changed", payload: { to: "completed" } })).toBe("completed");
    expect(callbackTypeOf({ event_type: "status_changed", payload: { to: "abandoned" } })).toBe("failed");
    expect(callbackTypeOf({ event_type: "status_changed", payload: { to: "blocked" } })).toBe("status_changed");
    expect(callbackTypeOf({ event_type: "budget_alert", payload: {} })).toBe("budget_warning");
    for (const other of ["intent_created", "agent_assigned", "lease_acquired", "comment", "federation.received"]) {
      expect(callbackTypeOf({ event_type: other, payload: {} })).toBeNull();
    }
  });

  it("back off exponentially from 1 s up to 5 minutes", () => {
    expect([1, 2, 3, 4].map(backoffMs)).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffMs(30)).toBe(300_000);
  });
});
