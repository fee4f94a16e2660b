import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { renderRoutesModule } from "./routes-module";
import { renderEventNamesModule } from "./event-names-module";

/**
 * pnpm sdk:generate (from the repository root): rewrites the SDK's route table and event-name
 * table from the catalogues, then the generated section of docs/sdk.md from the route table.
 */
const table = resolve(import.meta.dirname, "../src/generated/routes.ts");
writeFileSync(table, renderRoutesModule());
console.log(`wrote ${table}`);
const names = resolve(import.meta.dirname, "../src/generated/event-names.ts");
writeFileSync(names, renderEventNamesModule());
console.log(`wrote ${names}`);
// After the table: the section is rendered from the table just written.
const { injectReplaySection } = await import("./replay-doc");
const doc = resolve(import.meta.dirname, "../../../docs/sdk.md");
writeFileSync(doc, injectReplaySection(readFileSync(doc, "utf8")));
console.log(`wrote ${doc}`);
