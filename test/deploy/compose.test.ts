import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// docker-compose.yml is checked as text: no YAML parser is a dependency, and the rules are about
// exact strings an operator would see.
const compose = readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8");
const envExample = readFileSync(new URL("../../.env.example", import.meta.url), "utf8");

describe("docker-compose.yml", () => {
  it("binds every published port to 127.0.0.1 unless BIND_ADDRESS says otherwise", () => {
    const published = [...compose.matchAll(/^\s*-\s*"([^"]*:\d+)"\s*$/gm)].map((m) => m[1]);
    expect(published.length).toBeGreaterThan(0);
    for (const port of published) expect(port).toMatch(/^\$\{BIND_ADDRESS:-127\.0\.0\.1\}:/);
  });

  it("takes the API keys from the env file and refuses to start without them", () => {
    expect(compose).toMatch(/API_KEYS: \$\{API_KEYS:\?[^}]+\}/);
    expect(compose).not.toMatch(/api-keys\.example|CHANGE-ME/);
  });

  it(".env.example carries no usable key", () => {
    expect(envExample).toMatch(/^API_KEYS=$/m);
  });
});
