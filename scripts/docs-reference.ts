import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { REFERENCE_DOCUMENTS } from "./reference-docs";

/** pnpm docs:reference (from the repository root): rewrites the generated parts of README.md, docs/routes.md and docs/errors.md. */
for (const { file, update } of REFERENCE_DOCUMENTS) {
  const path = resolve(process.cwd(), file);
  const current = existsSync(path) ? readFileSync(path, "utf8") : "";
  writeFileSync(path, update(current));
  console.log(`wrote ${path}`);
}
