import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApiKeys, createKeysFile, hashKey, loadApiKeys } from "./api-keys";

const KEY_A = "alpha-key-0123456789abcdef";
const KEY_B = "bravo-key-0123456789abcdef";

const tmpDirs: string[] = [];
function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "im-api-keys-test-"));
  tmpDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function writeKeysFile(content: string): string {
  const file = path.join(tmpDir(), "keys.json");
  fs.writeFileSync(file, content);
  return file;
}

function loadError(inline: string | undefined, file: string | undefined): Error {
  try {
    loadApiKeys(inline, file);
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }
  throw new Error("loadApiKeys did not throw");
}

/** Serializes an object and its internals, Maps and Sets included. */
function dumpInternals(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Map) return { map: [...v.entries()] };
    if (v instanceof Set) return { set: [...v.values()] };
    return v;
  });
}

const entries = [
  { key: KEY_A, principal: "alice", roles: ["admin"] },
  { key_sha256: hashKey(KEY_B), principal: "bob", roles: ["agent", "operator"] },
];

describe("loadApiKeys", () => {
  it("reads inline JSON; entries with key and with key_sha256 both identify", () => {
    const keys = loadApiKeys(JSON.stringify(entries), undefined);
    expect(keys.size).toBe(2);
    expect(keys.identify(KEY_A)).toEqual({ principal: "alice", roles: ["admin"] });
    expect(keys.identify(KEY_B)).toEqual({ principal: "bob", roles: ["agent", "operator"] });
  });

  it("accepts the {keys: [...]} form", () => {
    const keys = loadApiKeys(JSON.stringify({ keys: entries }), undefined);
    expect(keys.identify(KEY_A)?.principal).toBe("alice");
  });

  it("reads a file", () => {
    const file = writeKeysFile(JSON.stringify(entries));
    const keys = loadApiKeys(undefined, file);
    expect(keys.identify(KEY_A)?.principal).toBe("alice");
    expect(keys.identify(KEY_B)?.principal).toBe("bob");
  });

  it("prefers inline keys over the file", () => {
    const file = writeKeysFile(JSON.stringify([{ key: KEY_B, principal: "from-file", roles: ["agent"] }]));
    const keys = loadApiKeys(JSON.stringify([{ key: KEY_A, principal: "inline", roles: ["agent"] }]), file);
    expect(keys.identify(KEY_A)?.principal).toBe("inline");
    expect(keys.identify(KEY_B)).toBeUndefined();
  });

  it("returns undefined for an unknown, absent or empty key, and for the hash itself", () => {
    const keys = loadApiKeys(JSON.stringify(entries), undefined);
    expect(keys.identify("unknown-key-0123456789")).toBeUndefined();
    expect(keys.identify(undefined)).toBeUndefined();
    expect(keys.identify("")).toBeUndefined();
    expect(keys.identify(hashKey(KEY_B))).toBeUndefined();
    expect(keys.identify(KEY_A.toUpperCase())).toBeUndefined();
  });

  it("keeps no plaintext key", () => {
    const keys = loadApiKeys(JSON.stringify(entries), undefined);
    const dump = dumpInternals(keys);
    expect(dump).toContain(hashKey(KEY_A));
    expect(dump).not.toContain(KEY_A);
    expect(dump).not.toContain(KEY_B);
    expect(JSON.stringify(keys)).not.toContain(KEY_A);
  });

  const badLists: Array<[string, string]> = [
    ["invalid JSON", "{not json"],
    ["an empty list", "[]"],
    ["an empty keys object", '{"keys": []}'],
    ["a short key", JSON.stringify([{ key: "short", principal: "p", roles: ["admin"] }])],
    ["a bad role", JSON.stringify([{ key: KEY_A, principal: "p", roles: ["root"] }])],
    ["no roles", JSON.stringify([{ key: KEY_A, principal: "p", roles: [] }])],
    ["an uppercase key_sha256", JSON.stringify([{ key_sha256: hashKey(KEY_A).toUpperCase(), principal: "p", roles: ["admin"] }])],
    ["neither key nor key_sha256", JSON.stringify([{ principal: "p", roles: ["admin"] }])],
  ];

  it.each(badLists)("rejects %s from API_KEYS, naming API_KEYS", (_label, text) => {
    const error = loadError(text, undefined);
    expect(error.message).toContain("API_KEYS");
    expect(error.message).not.toContain("API_KEYS_FILE");
  });

  it.each(badLists)("rejects %s from API_KEYS_FILE, naming API_KEYS_FILE", (_label, text) => {
    const file = writeKeysFile(text);
    const error = loadError(undefined, file);
    expect(error.message).toContain("API_KEYS_FILE");
  });

  it("rejects a missing file, naming API_KEYS_FILE and the path", () => {
    const file = path.join(tmpDir(), "absent.json");
    const error = loadError(undefined, file);
    expect(error.message).toContain("API_KEYS_FILE");
    expect(error.message).toContain(file);
  });

  it("refuses to start with no keys configured", () => {
    const error = loadError(undefined, undefined);
    expect(error.message).toContain("API_KEYS");
  });

  it("does not echo a short key in its error", () => {
    const error = loadError(JSON.stringify([{ key: "secret-short", principal: "p", roles: ["admin"] }]), undefined);
    expect(error.message).not.toContain("secret-short");
  });
});

describe("createKeysFile", () => {
  it("writes a 0600 file with four distinct keys, one per role, that loadApiKeys accepts", () => {
    const file = path.join(tmpDir(), "nested", "dir", "keys.json");
    const created = createKeysFile(file);
    expect(created.file).toBe(file);

    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    const onDisk = JSON.parse(fs.readFileSync(file, "utf8")) as Array<{ key: string; principal: string; roles: string[] }>;
    expect(onDisk).toHaveLength(4);
    expect(onDisk).toEqual(created.keys);
    expect(onDisk.map((k) => k.roles).sort()).toEqual([["admin"], ["agent"], ["coordinator"], ["operator"]]);
    expect(new Set(onDisk.map((k) => k.key)).size).toBe(4);
    for (const k of onDisk) expect(k.key.length).toBeGreaterThanOrEqual(16);

    const keys = loadApiKeys(undefined, file);
    expect(keys.size).toBe(4);
    for (const k of created.keys) expect(keys.identify(k.key)).toEqual({ principal: k.principal, roles: k.roles });
  });

  it("makes different keys on every call", () => {
    const a = createKeysFile(path.join(tmpDir(), "a.json")).keys.map((k) => k.key);
    const b = createKeysFile(path.join(tmpDir(), "b.json")).keys.map((k) => k.key);
    for (const key of a) expect(b).not.toContain(key);
  });

  it("leaves the file readable only by its owner even when it already existed with wider permissions", () => {
    const file = path.join(tmpDir(), "keys.json");
    fs.writeFileSync(file, "[]", { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    createKeysFile(file);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe("ApiKeys", () => {
  it("counts entries by hash, so the same key twice is one entry and the last identity wins", () => {
    const keys = new ApiKeys([
      { key: KEY_A, principal: "first", roles: ["agent"] },
      { key_sha256: hashKey(KEY_A), principal: "second", roles: ["admin"] },
    ]);
    expect(keys.size).toBe(1);
    expect(keys.identify(KEY_A)?.principal).toBe("second");
  });
});
