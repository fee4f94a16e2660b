import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { injectGeneratedSection } from "../libs/contracts/src/subjects-doc";

/** pnpm docs:subjects (run from the repository root): rewrites the generated part of docs/subjects.md from libs/contracts. */
const file = resolve(process.cwd(), "docs/subjects.md");
writeFileSync(file, injectGeneratedSection(readFileSync(file, "utf8")));
console.log(`wrote ${file}`);
