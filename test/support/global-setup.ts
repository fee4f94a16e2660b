import type { TestProject } from "vitest/node";
import { resolveBackends } from "./backends";

export default async function setup(project: TestProject) {
  const backends = await resolveBackends();
  project.provide("natsUrl", backends.natsUrl);
  project.provide("databaseUrl", backends.databaseUrl);
  return () => backends.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    databaseUrl: string;
  }
}
