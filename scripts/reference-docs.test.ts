import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { apiRoutes, errorCatalogue } from "@intentmesh/contracts";
import { REFERENCE_DOCUMENTS, inject, renderConfiguration, renderErrors, renderMcpTools, renderRoutes } from "./reference-docs";
import { clusterServices } from "../services/cluster";

const root = resolve(__dirname, "..");

describe("the generated reference tables", () => {
  for (const { file, update } of REFERENCE_DOCUMENTS) {
    it(`${file} matches what pnpm docs:reference generates`, () => {
      const committed = readFileSync(resolve(root, file), "utf8");
      expect(update(committed), `${file} is stale: run pnpm docs:reference`).toBe(committed);
    });
  }

  it("lists every variable of every service, every route and every error code", () => {
    const configuration = renderConfiguration();
    for (const service of Object.values(clusterServices)) for (const name of Object.keys(service.env.shape)) expect(configuration).toContain(`\`${name}\``);
    expect(configuration).toContain("`CORS_ORIGINS`");
    const routes = renderRoutes();
    for (const route of apiRoutes) expect(routes).toContain(`\`${route.operationId}\``);
    const tools = renderMcpTools();
    for (const route of apiRoutes) expect(tools).toContain(`| \`${route.operationId}\`: `);
    const errors = renderErrors();
    for (const code of Object.keys(errorCatalogue)) expect(errors).toContain(`\`${code}\``);
  });

  it("replaces only its own generated part", () => {
    const once = inject("# Title\n\nprose\n", "x", "table");
    expect(once.startsWith("# Title\n\nprose\n")).toBe(true);
    expect(inject(once, "x", "table")).toBe(once);
    expect(inject(once, "x", "other")).toContain("other");
    expect(inject(inject(once, "y", "second"), "x", "table")).toContain("second");
  });
});
