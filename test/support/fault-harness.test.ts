import { describe, expect, it } from "vitest";
import { expectExactlyOnce } from "./fault-harness";

/** The kill tests' one assertion must fail on each way a write can be lost or doubled. */
describe("expectExactlyOnce", () => {
  const good = { acknowledged: ["a", "b"], stored: ["a", "b", "c"], published: { stream: ["c", "a", "b"], log: ["a", "b", "c"] } };

  it("holds when every acknowledged item is stored once and every place published each stored item once", () => {
    expect(() => expectExactlyOnce(good)).not.toThrow();
  });

  it.each([
    ["an acknowledged write was lost", { ...good, acknowledged: ["a", "z"] }, "acknowledged but not stored"],
    ["an item was stored twice", { ...good, stored: ["a", "b", "c", "a"] }, "nothing is stored twice"],
    ["a stream carried an item twice", { ...good, published: { ...good.published, stream: ["a", "b", "c", "b"] } }, "stream: published twice"],
    ["a log never got a stored item", { ...good, published: { ...good.published, log: ["a", "b"] } }, "log: stored but never published"],
    ["a stream carried what was never stored", { ...good, published: { ...good.published, stream: ["a", "b", "c", "x"] } }, "stream: published but not stored"],
  ])("fails when %s", (_what, input, message) => {
    expect(() => expectExactlyOnce(input)).toThrow(message);
  });
});
