import { describe, expect, it } from "vitest";
import { decideEngagement } from "./engagement";

const decide = (s: Partial<{ confidence: number; risk: number; reversibility: number }>) =>
  decideEngagement({ confidence: 1, risk: 0, reversibility: 1, context: {}, ...s });

describe("engagement decisions (spec 4.5 thresholds)", () => {
  it("each mode at its thresholds", () => {
    expect(decide({ confidence: 0.85, risk: 0.2, reversibility: 0.5 })).toMatchObject({ mode: "autonomous", should_ask: false });
    expect(decide({ confidence: 0.84 })).toMatchObject({ mode: "request_input", should_ask: true });
    expect(decide({ confidence: 0.49 })).toMatchObject({ mode: "require_input", should_ask: true });
    expect(decide({ risk: 0.51 })).toMatchObject({ mode: "require_input", should_ask: true });
    expect(decide({ risk: 0.8 })).toMatchObject({ mode: "defer", should_ask: false });
    expect(decide({ reversibility: 0.1 })).toMatchObject({ mode: "defer", should_ask: false });
  });
  it("overlaps: defer before require_input (risk 0.9 with confidence 0.2), autonomous before everything", () => {
    expect(decide({ risk: 0.9, confidence: 0.2 }).mode).toBe("defer");
    expect(decide({ reversibility: 0.05, confidence: 0.3 }).mode).toBe("defer");
    expect(decide({ confidence: 0.9, risk: 0.1, reversibility: 0.6 }).mode).toBe("autonomous");
  });
});
