import type { EngagementDecision, EngagementSignals } from "@intentmesh/contracts";

/**
 * Spec 4.5's engagement table. Where conditions overlap, the first match wins, in the order the
 * official clients use: autonomous, defer, require_input, request_input (so risk >= 0.80, which
 * also satisfies require_input, defers).
 */
export function decideEngagement(signals: EngagementSignals): EngagementDecision {
  const { confidence, risk, reversibility } = signals;
  const decision = (mode: EngagementDecision["mode"], should_ask: boolean, rationale: string): EngagementDecision => ({ mode, should_ask, rationale, signals });
  if (confidence >= 0.85 && risk <= 0.2 && reversibility >= 0.5) {
    return decision("autonomous", false, `confidence ${confidence} >= 0.85, risk ${risk} <= 0.20 and reversibility ${reversibility} >= 0.50: proceed`);
  }
  if (risk >= 0.8 || reversibility <= 0.1) {
    return decision("defer", false, risk >= 0.8 ? `risk ${risk} >= 0.80: defer to a human` : `reversibility ${reversibility} <= 0.10: defer to a human`);
  }
  if (confidence < 0.5 || risk > 0.5) {
    return decision("require_input", true, confidence < 0.5 ? `confidence ${confidence} < 0.50: input required` : `risk ${risk} > 0.50: input required`);
  }
  return decision("request_input", true, "moderate uncertainty: ask, then proceed");
}
