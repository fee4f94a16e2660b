import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { errorCatalogue, isErrorCode, listErrors } from "./error-catalogue";

const root = resolve(__dirname, "../../..");

/** Every (code, status) the non-test TypeScript sources of services/ and libs/ raise. */
function codesInSources(): Map<string, Set<number>> {
  const files = execFileSync("git", ["ls-files", "services/*.ts", "libs/*.ts"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((file) => file && !file.endsWith(".test.ts"));
  const found = new Map<string, Set<number>>();
  const add = (code: string, status: number) => found.set(code, (found.get(code) ?? new Set()).add(status));
  for (const file of files) {
    const text = readFileSync(resolve(root, file), "utf8");
    for (const match of text.matchAll(/new AppError\(\s*"([A-Z0-9_]+)"\s*,\s*(\d+)/g)) add(match[1]!, Number(match[2]));
    for (const match of text.matchAll(/appError\(\s*"([A-Z0-9_]+)"/g)) add(match[1]!, errorCatalogue[match[1]! as keyof typeof errorCatalogue]?.status ?? -1);
    // A literal code with a computed status (gateway http.ts: BAD_REQUEST with the parser's 4xx): the code must still be catalogued.
    for (const match of text.matchAll(/new AppError\(\s*"([A-Z0-9_]+)"\s*,\s*[a-z]/g)) if (!isErrorCode(match[1]!)) add(match[1]!, -1);
    // errors.notFound("intent", id) raises INTENT_NOT_FOUND.
    for (const match of text.matchAll(/notFound\(\s*"([a-z_ ]+)"/g)) add(`${match[1]!.toUpperCase().replace(/ /g, "_")}_NOT_FOUND`, 404);
    // Codes carried as data: { code: "X", status: 400 }.
    for (const match of text.matchAll(/code:\s*"([A-Z][A-Z0-9_]+)"\s*,\s*status:\s*(\d+)/g)) add(match[1]!, Number(match[2]));
  }
  return found;
}

describe("error catalogue", () => {
  it("lists every code with an HTTP error status and a title", () => {
    const all = listErrors();
    expect(all.length).toBeGreaterThan(60);
    for (const error of all) {
      expect(error.status, error.code).toBeGreaterThanOrEqual(400);
      expect(error.status, error.code).toBeLessThan(600);
      expect(error.title.length, error.code).toBeGreaterThan(0);
    }
    expect(isErrorCode("LEASE_HELD")).toBe(true);
    expect(isErrorCode("NO_SUCH_CODE")).toBe(false);
  });

  it("catalogues every code the sources raise, with the status they raise it with", () => {
    const found = codesInSources();
    expect(found.size).toBeGreaterThan(50);
    expect(found.has("LEASE_HELD"), "the scan sees appError(...) calls").toBe(true);
    for (const [code, statuses] of found) {
      expect(isErrorCode(code), `${code} is raised in the sources but not catalogued`).toBe(true);
      for (const status of statuses) expect(errorCatalogue[code as keyof typeof errorCatalogue].status, code).toBe(status);
    }
  });
});
