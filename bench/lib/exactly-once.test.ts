import { describe, expect, it } from "vitest";
import { checkExactlyOnce, formatReports } from "./exactly-once";

describe("the scale benchmark's exactly-once comparison", () => {
  it("passes when every acknowledged key is stored once and published once", () => {
    const report = checkExactlyOnce("append_event", ["a", "b", "b"], ["a", "b", "unacknowledged"], ["unacknowledged", "b", "a"]);
    expect(report).toMatchObject({ acknowledged: 2, ok: true, missingInDatabase: [], duplicatedInDatabase: [], missingInStream: [], duplicatedInStream: [] });
    expect(formatReports([report])).toBe("ok   append_event: 2 acknowledged writes, each once in the database and once in the stream");
  });

  it("catches an acknowledged write that is missing from the database and one stored twice", () => {
    const report = checkExactlyOnce("create_intent", ["a", "b", "c"], ["a", "b", "b"], ["a", "b", "c"]);
    expect(report.ok).toBe(false);
    expect(report.missingInDatabase).toEqual(["c"]);
    expect(report.duplicatedInDatabase).toEqual(["b x2"]);
    expect(report.missingInStream).toEqual([]);
  });

  it("catches an acknowledged write that was never published and one published twice", () => {
    const report = checkExactlyOnce("post_message", ["a", "b", "c"], ["a", "b", "c"], ["a", "a", "a", "c"]);
    expect(report.ok).toBe(false);
    expect(report.missingInStream).toEqual(["b"]);
    expect(report.duplicatedInStream).toEqual(["a x3"]);
    expect(formatReports([report])).toBe(
      [
        "FAIL post_message: 3 acknowledged writes",
        "       1 acknowledged but not in the stream: b",
        "       1 in the stream more than once: a x3",
      ].join("\n"),
    );
  });
});
