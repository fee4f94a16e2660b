import { describe, expect, it } from "vitest";
import type { Intentmesh } from "@intentmesh/sdk";
import { listAll } from "./inbox-store";

/** A client whose intentsList serves `total` intents in pages of 500, recording each query. */
function pagedClient(total: number) {
  const queries: Record<string, unknown>[] = [];
  const client = {
    ops: {
      intentsList: async ({ query }: { query: Record<string, unknown> }) => {
        queries.push(query);
        const start = query.after ? Number(query.after) : 0;
        const end = Math.min(total, start + 500);
        const intents = Array.from({ length: end - start }, (_, i) => ({ id: `i-${start + i}` }));
        return { intents, has_more: end < total, next_cursor: end < total ? String(end) : null };
      },
    },
  } as unknown as Intentmesh;
  return { client, queries };
}

describe("the inbox's intent lists", () => {
  it("follows next_cursor to the last page", async () => {
    const { client, queries } = pagedClient(1234);
    const { intents, partial } = await listAll(client, "suspended_awaiting_input");
    expect(intents).toHaveLength(1234);
    expect(new Set(intents.map((intent) => intent.id)).size).toBe(1234);
    expect(partial).toBe(false);
    expect(queries).toEqual([
      { status: "suspended_awaiting_input", limit: 500 },
      { status: "suspended_awaiting_input", limit: 500, after: "500" },
      { status: "suspended_awaiting_input", limit: 500, after: "1000" },
    ]);
  });

  it("stops at 5000 intents and says the list is partial", async () => {
    const { client, queries } = pagedClient(7000);
    const { intents, partial } = await listAll(client, "active");
    expect(intents).toHaveLength(5000);
    expect(partial).toBe(true);
    expect(queries).toHaveLength(10);
  });
});
