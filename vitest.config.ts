import { defineConfig } from "vitest/config";

/**
 * Four lanes (vitest projects), run together by `pnpm test` and alone by `pnpm test:<lane>`:
 * - unit: pure rules beside the code and in-process tests that need no NATS and no PostgreSQL
 *   (`pnpm test:unit` runs with NATS_URL and DATABASE_URL pointing nowhere);
 * - service: one library or one service against real NATS and PostgreSQL (`*.int.test.ts`,
 *   `*.service.test.ts`, through test/support/service-harness.ts);
 * - e2e: flows across services through the gateway (test/e2e, test/deploy/build.test.ts, the SDK's
 *   and the CLI's tests against the whole cluster in packages/<name>/test/*.e2e.test.ts);
 * - fault: kill -9 of a service, NATS or PostgreSQL restarts, outages (`*-kill`, `*-restart`,
 *   degraded, the SDK's dropped answers), where the assertion is that nothing is lost and nothing
 *   applied twice.
 * Every file with backends gets its own database and bus namespace, so files run in parallel.
 */
const backendLane = { globalSetup: ["test/support/global-setup.ts"] };
const faultFiles = ["test/e2e/*-kill.e2e.test.ts", "test/e2e/*-restart.e2e.test.ts", "test/e2e/degraded.e2e.test.ts", "packages/sdk/test/idempotency.e2e.test.ts"];
const backendFiles = ["**/*.int.test.ts", "**/*.service.test.ts", "test/e2e/**", "test/deploy/build.test.ts", "packages/*/test/**/*.e2e.test.ts"];

export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The JSON report lets CI print a plain "N passed, N failed" closing line.
    reporters: ["default", ["json", { outputFile: ".data/test-results.json" }]],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["libs/*/src/**/*.test.ts", "scripts/*.test.ts", "services/*.test.ts", "services/*/src/**/*.test.ts", "libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "test/deploy/**/*.test.ts", "test/support/*.test.ts", "packages/*/src/**/*.test.ts", "packages/*/test/**/*.test.ts", "bench/lib/*.test.ts"],
          exclude: ["**/node_modules/**", ...backendFiles],
        },
      },
      {
        extends: true,
        test: { name: "service", include: ["libs/*/test/**/*.int.test.ts", "bench/lib/*.int.test.ts", "services/*/test/**/*.int.test.ts", "services/*/test/**/*.service.test.ts"], ...backendLane },
      },
      {
        extends: true,
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts", "test/deploy/build.test.ts", "packages/*/test/**/*.e2e.test.ts"], exclude: ["**/node_modules/**", ...faultFiles], ...backendLane },
      },
      {
        extends: true,
        test: { name: "fault", include: faultFiles, ...backendLane },
      },
    ],
  },
});
