import { resolve } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

describe("the SDK core in a browser bundle", () => {
  it("bundles for the browser from its own sources alone: no Node module, no zod, no server contracts", async () => {
    const result = await build({
      entryPoints: [resolve(__dirname, "../src/index.ts")],
      bundle: true,
      platform: "browser",
      format: "esm",
      target: "es2022",
      write: false,
      metafile: true,
      minify: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.length).toBeGreaterThan(3);
    // Everything in the bundle is the SDK's own source: the catalogue reaches it as types only.
    for (const input of inputs) expect(input, input).toMatch(/^packages\/sdk\/src\//);
    const code = result.outputFiles[0]!.text;
    expect(code).not.toMatch(/from ?"node:|require\(|process\.env|Buffer\./);
    // The table of every operation (and of the event names) is there as data; a size check keeps it
    // from growing a schema library: zod alone would add more than 50 kB minified, while the tables
    // grow by about 100 bytes a route.
    expect(code).toContain("/intents/{intent_id}/suspend/respond");
    expect(code.length).toBeLessThan(48_000);
  });
});
