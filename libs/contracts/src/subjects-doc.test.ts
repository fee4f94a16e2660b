import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { injectGeneratedSection, listCommands, renderGeneratedSection } from "./subjects-doc";
import { intentsCommands } from "./subjects";

describe("docs/subjects.md", () => {
  it("matches what pnpm docs:subjects generates from the contracts", () => {
    const committed = readFileSync(resolve(__dirname, "../../../docs/subjects.md"), "utf8");
    expect(injectGeneratedSection(committed), "docs/subjects.md is stale: run pnpm docs:subjects").toBe(committed);
  });

  it("lists every command, event and error of the catalogues", () => {
    const section = renderGeneratedSection();
    for (const command of Object.values(intentsCommands)) expect(section).toContain(`\`${command.subject}\``);
    expect(listCommands().length).toBeGreaterThan(Object.keys(intentsCommands).length);
    expect(section).toContain("`channel_message`");
    expect(section).toContain("`LEASE_HELD`");
  });

  it("replaces only the generated part", () => {
    const once = injectGeneratedSection("# Title\n\nprose\n");
    expect(once.startsWith("# Title\n\nprose\n")).toBe(true);
    expect(injectGeneratedSection(once)).toBe(once);
    expect(injectGeneratedSection(once.replace("`LEASE_HELD`", "`STALE`"))).toBe(once);
  });
});
