import { describe, expect, it } from "vitest";
import { PutRetryPolicyBody, RecordFailureBody } from "./retries";

describe("PutRetryPolicyBody", () => {
  it("fills every omitted field with its default", () => {
    expect(PutRetryPolicyBody.parse({})).toEqual({
      strategy: "exponential",
      max_retries: 3,
      base_delay_ms: 1000,
      max_delay_ms: 60_000,
      fallback_agent_id: null,
      failure_threshold: 4,
    });
  });

  it("derives max_delay_ms from a large base and failure_threshold from max_retries", () => {
    expect(PutRetryPolicyBody.parse({ base_delay_ms: 120_000, max_retries: 7 })).toMatchObject({ max_delay_ms: 120_000, failure_threshold: 8 });
    expect(PutRetryPolicyBody.parse({ max_retries: 1000 }).failure_threshold).toBe(1000);
  });

  it("keeps explicit values", () => {
    const body = { strategy: "none", max_retries: 0, base_delay_ms: 0, max_delay_ms: 0, fallback_agent_id: "b", failure_threshold: 1 } as const;
    expect(PutRetryPolicyBody.parse(body)).toEqual(body);
  });

  it("refuses max_delay_ms below base_delay_ms, naming max_delay_ms", () => {
    const parsed = PutRetryPolicyBody.safeParse({ base_delay_ms: 10, max_delay_ms: 9 });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.path.join("."))).toEqual(["max_delay_ms"]);
  });
});

describe("RecordFailureBody", () => {
  it("defaults error_message and metadata and leaves retry_scheduled_at absent", () => {
    const parsed = RecordFailureBody.parse({ attempt_number: 1, error_code: "TIMEOUT" });
    expect(parsed).toEqual({ attempt_number: 1, error_code: "TIMEOUT", error_message: "", metadata: {} });
    expect("retry_scheduled_at" in parsed).toBe(false);
  });

  it("accepts timestamps with an offset and null", () => {
    expect(RecordFailureBody.parse({ attempt_number: 1, error_code: "TIMEOUT", retry_scheduled_at: "2026-11-22T10:00:00+01:00" }).retry_scheduled_at).toBe("2026-11-22T10:00:00+01:00");
    expect(RecordFailureBody.parse({ attempt_number: 1, error_code: "TIMEOUT", retry_scheduled_at: null }).retry_scheduled_at).toBeNull();
  });

  it.each(["BUDGET_EXCEEDED", "PERMISSION_DENIED"])("refuses a retry time for the non-retryable %s", (code) => {
    const parsed = RecordFailureBody.safeParse({ attempt_number: 1, error_code: code, retry_scheduled_at: "2026-11-22T10:00:00Z" });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.path).toEqual(["retry_scheduled_at"]);
    expect(RecordFailureBody.safeParse({ attempt_number: 1, error_code: code, retry_scheduled_at: null }).success).toBe(true);
  });
});
