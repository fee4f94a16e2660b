import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The README is a map: every relative link in it and in docs/ must lead to a file that exists,
 * so the map never promises a page (or a capability) that has not landed.
 */
const root = resolve(import.meta.dirname, "..");
const documents = [
  "README.md",
  ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`),
  ...readdirSync(join(root, "packages")).map((name) => `packages/${name}/README.md`).filter((path) => existsSync(join(root, path))),
];

function brokenLinks(path: string): string[] {
  const text = readFileSync(join(root, path), "utf8").replace(/```[\s\S]*?```/g, "");
  const broken: string[] = [];
  for (const match of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    if (!existsSync(normalize(join(root, dirname(path), decodeURI(target))))) broken.push(target);
  }
  return broken;
}

describe("links between documents", () => {
  it.each(documents)("every relative link in %s leads to a file that exists", (path) => {
    expect(brokenLinks(path)).toEqual([]);
  });
});
