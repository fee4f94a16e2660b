import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/*/src/**/*.test.ts", "services/*.test.ts", "services/*/src/**/*.test.ts", "libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // Every integration file gets its own database and bus namespace, so files run in parallel.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["test/support/global-setup.ts"],
    // The JSON report lets CI print a plain "N passed, N failed" closing line.
    reporters: ["default", ["json", { outputFile: ".data/test-results.json" }]],
  },
});
