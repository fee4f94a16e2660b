import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { renderRoutesModule } from "./routes-module";

/**
 * pnpm sdk:generate (from the repository root): rewrites the SDK's route table from the catalogue,
 * then the generated section of docs/sdk.md from that table.
 */
const table = resolve(import.meta.dirname, "../src/generated/routes.ts");
writeFileSync(table, renderRoutesModule());
console.log(`wrote ${table}`);
// After the table: the section is rendered from the table just written.
const { injectReplaySection } = await import("./replay-doc");
const doc = resolve(import.meta.dirname, "../../../docs/sdk.md");
writeFileSync(doc, injectReplaySection(readFileSync(doc, "utf8")));
console.log(`wrote ${doc}`);
