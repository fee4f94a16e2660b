import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { injectReplaySection, renderReplaySection } from "../scripts/replay-doc";

describe("docs/sdk.md", () => {
  it("lists every operation in the replay class the client applies to it (run pnpm sdk:generate when this fails)", () => {
    const committed = readFileSync(resolve(__dirname, "../../../docs/sdk.md"), "utf8");
    expect(injectReplaySection(committed), "docs/sdk.md is stale: run pnpm sdk:generate").toBe(committed);
    const section = renderReplaySection();
    expect(section).toContain("- `intentsAppendEvent` (POST /intents/{intent_id}/events)");
    expect(section).toMatch(/\*\*Keyed[^\n]*\n\n- `federationDispatch`/);
  });
});
