import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { renderRoutesModule } from "./routes-module";

/** pnpm sdk:generate (from the repository root): rewrites the SDK's route table from the catalogue. */
const file = resolve(import.meta.dirname, "../src/generated/routes.ts");
writeFileSync(file, renderRoutesModule());
console.log(`wrote ${file}`);
