import { describe, expect, it } from "vitest";
import { slotsPerWorker, splitConnections } from "./load-split";

const total = (slots: { connections: number }[]) => slots.reduce((sum, slot) => sum + slot.connections, 0);

describe("splitting the load driver's connections", () => {
  it("splits them evenly between the targets, the last taking the remainder", () => {
    expect(splitConnections(["a", "b", "c"], 32)).toEqual([
      { url: "a", connections: 10 },
      { url: "b", connections: 10 },
      { url: "c", connections: 12 },
    ]);
    expect(splitConnections(["a", "b"], 1).map((s) => s.connections)).toEqual([1, 1]);
  });

  it("shares each target's connections among the load processes without adding or losing one", () => {
    const perWorker = slotsPerWorker(["g1", "g2", "g3", "g4"], 128, 4);
    expect(perWorker.map(total)).toEqual([32, 32, 32, 32]);
    expect(perWorker.every((slots) => slots.map((s) => s.url).join() === "g1,g2,g3,g4")).toBe(true);
    for (const [targets, connections, workers] of [[["g"], 5, 4], [["g1", "g2"], 7, 3], [["g1", "g2", "g3"], 128, 6], [["g"], 1, 4]] as const) {
      const slots = slotsPerWorker(targets, connections, workers);
      expect(slots).toHaveLength(workers);
      expect(total(slots.flat())).toBe(total(splitConnections(targets, connections)));
      for (const url of targets) expect(total(slots.flat().filter((s) => s.url === url))).toBe(splitConnections(targets, connections).find((s) => s.url === url)!.connections);
      expect(slots.flat().every((s) => s.connections > 0)).toBe(true);
    }
  });

  it("gives a target with fewer connections than processes to the first processes", () => {
    expect(slotsPerWorker(["g"], 2, 4)).toEqual([[{ url: "g", connections: 1 }], [{ url: "g", connections: 1 }], [], []]);
  });
});
