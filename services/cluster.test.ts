import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { clusterServices } from "./cluster";

/** A service is the folder with its definition: every manifest on disk is in the one list, under its own name. */
const servicesDir = path.dirname(fileURLToPath(import.meta.url));

describe("the service manifest", () => {
  it("lists every services/<name>/src/manifest.ts, under the name the definition gives, in CLUSTER_SERVICES order", () => {
    const onDisk = fs
      .readdirSync(servicesDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(servicesDir, entry.name, "src", "manifest.ts")))
      .map((entry) => entry.name)
      .sort();
    expect(Object.keys(clusterServices).sort()).toEqual(onDisk);
    expect(Object.keys(clusterServices)).toEqual([...CLUSTER_SERVICES]);
    for (const [name, definition] of Object.entries(clusterServices)) expect(definition.name).toBe(name);
  });

  it("gives every service its own variables with defaults, so a service starts with none set", () => {
    for (const definition of Object.values(clusterServices)) {
      const parsed = definition.env.safeParse({});
      expect(parsed.success, `${definition.name}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});
