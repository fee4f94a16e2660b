import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { StartupError } from "@intentmesh/telemetry";
import { KEY_BYTES, KeyRing } from "./envelope";

/** Where the key-encryption keys come from (docs/vaults.md, README configuration). */
export interface KeyRingSource {
  /** VAULT_KEK: `id:base64key[,id:base64key...]`. */
  keys?: string;
  /** VAULT_KEK_FILE: a file with the same entries, one per line or comma-separated (a mounted Kubernetes secret). */
  file?: string;
  /** VAULT_KEK_PRIMARY: the id new material is wrapped under; default the first entry. */
  primary?: string;
  /** Without keys or file: a development key is generated once here (mode 0600) and a warning logged. */
  dataDir: string;
}

export const DEV_KEK_FILE = "vault-kek.dev";

/** `id:base64` entries into keys; the sentence names the variable and the entry, never a key. */
export function parseKeyEntries(text: string, variable: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  const entries = text
    .split(/[\n,]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "" && !entry.startsWith("#"));
  entries.forEach((entry, index) => {
    const colon = entry.indexOf(":");
    const id = colon > 0 ? entry.slice(0, colon) : "";
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) throw new StartupError(variable, `entry ${index + 1} of ${variable} must be <id>:<base64 of ${KEY_BYTES} bytes>, with an id of letters, digits, . _ -`);
    const key = Buffer.from(entry.slice(colon + 1), "base64");
    if (key.length !== KEY_BYTES) throw new StartupError(variable, `key ${id} of ${variable} is ${key.length} bytes once decoded; a key-encryption key is ${KEY_BYTES} random bytes in base64 (openssl rand -base64 32)`);
    if (keys.has(id)) throw new StartupError(variable, `key id ${id} appears twice in ${variable}`);
    keys.set(id, key);
  });
  if (!keys.size) throw new StartupError(variable, `${variable} holds no key`);
  return keys;
}

/** The key ring from configuration, or the development key; `development` says which. */
export function loadKeyRing(source: KeyRingSource): { ring: KeyRing; development: boolean } {
  if (source.keys?.trim() || source.file?.trim()) {
    const keys = new Map<string, Buffer>();
    if (source.keys?.trim()) for (const [id, key] of parseKeyEntries(source.keys, "VAULT_KEK")) keys.set(id, key);
    if (source.file?.trim()) {
      let text: string;
      try {
        text = fs.readFileSync(source.file, "utf8");
      } catch {
        throw new StartupError("VAULT_KEK_FILE", `VAULT_KEK_FILE ${source.file} cannot be read`);
      }
      for (const [id, key] of parseKeyEntries(text, "VAULT_KEK_FILE")) {
        if (keys.has(id)) throw new StartupError("VAULT_KEK_FILE", `key id ${id} is in both VAULT_KEK and VAULT_KEK_FILE`);
        keys.set(id, key);
      }
    }
    const primary = source.primary?.trim() || [...keys.keys()][0]!;
    if (!keys.has(primary)) throw new StartupError("VAULT_KEK_PRIMARY", `VAULT_KEK_PRIMARY names ${primary}, which is not among the configured key ids (${[...keys.keys()].join(", ")})`);
    return { ring: new KeyRing(keys, primary), development: false };
  }
  const file = path.resolve(source.dataDir, DEV_KEK_FILE);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `dev-1:${randomBytes(KEY_BYTES).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  }
  const keys = parseKeyEntries(fs.readFileSync(file, "utf8"), "VAULT_KEK_FILE");
  return { ring: new KeyRing(keys, [...keys.keys()][0]!), development: true };
}
