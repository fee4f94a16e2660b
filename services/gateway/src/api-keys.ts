import { StartupError } from "@intentmesh/telemetry";
import { hash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { Role } from "@intentmesh/contracts";

/** `federation` is the role of the keys given to peer servers (docs/federation.md, "Keys between servers"). */
const RoleSchema = z.enum(["admin", "coordinator", "operator", "agent", "federation"]);
const KeyEntry = z.union([
  z.object({ key: z.string().min(16, "a key must be at least 16 characters"), principal: z.string().min(1), roles: z.array(RoleSchema).min(1) }),
  z.object({ key_sha256: z.string().regex(/^[0-9a-f]{64}$/, "key_sha256 must be 64 lowercase hex digits"), principal: z.string().min(1), roles: z.array(RoleSchema).min(1) }),
]);
const KeyList = z.array(KeyEntry).min(1, "at least one key is required");

export interface KeyIdentity {
  principal: string;
  roles: Role[];
}

/** One-shot SHA-256 (no Hash object per request: every API request hashes its key). */
export const hashKey = (key: string) => hash("sha256", key, "hex");

/**
 * The API keys the gateway accepts, held only as SHA-256 hashes. A presented key is hashed and
 * looked up. Keys themselves are never kept or logged.
 */
export class ApiKeys {
  private readonly byHash = new Map<string, KeyIdentity>();
  private readonly principals = new Set<string>();

  constructor(entries: z.infer<typeof KeyList>) {
    for (const entry of entries) {
      const hash = "key" in entry ? hashKey(entry.key) : entry.key_sha256;
      this.byHash.set(hash, { principal: entry.principal, roles: entry.roles });
      this.principals.add(entry.principal);
    }
  }

  get size(): number {
    return this.byHash.size;
  }

  /** Whether some key acts under this principal name. */
  hasPrincipal(name: string): boolean {
    return this.principals.has(name);
  }

  identify(presented: string | undefined): KeyIdentity | undefined {
    if (!presented) return undefined;
    // Looking up the SHA-256 of the presented key reveals nothing usable through timing: an
    // attacker controls the digest's input, not its bytes, so no prefix of a real key leaks.
    return this.byHash.get(hashKey(presented));
  }
}

/** Reads keys from API_KEYS (inline JSON) or API_KEYS_FILE; fails with a sentence saying which and why. */
export function loadApiKeys(inline: string | undefined, file: string | undefined): ApiKeys {
  let raw: unknown;
  let source: string;
  let variable: string;
  if (inline) {
    source = "API_KEYS";
    variable = "API_KEYS";
    raw = parseJson(inline, source, variable);
  } else if (file) {
    source = `API_KEYS_FILE (${file})`;
    variable = "API_KEYS_FILE";
    if (!fs.existsSync(file)) throw new StartupError(variable, `${source} does not exist: point API_KEYS_FILE at a JSON list of {key, principal, roles}`);
    raw = parseJson(fs.readFileSync(file, "utf8"), source, variable);
  } else {
    throw new StartupError("API_KEYS", "no API keys are configured: set API_KEYS (inline JSON) or API_KEYS_FILE (path to a JSON file)");
  }
  const list = KeyList.safeParse(Array.isArray(raw) ? raw : (raw as { keys?: unknown })?.keys);
  if (!list.success) {
    const issue = list.error.issues[0]!;
    throw new StartupError(variable, `${source} is not a valid key list: [${issue.path.join(".")}] ${issue.message}; each entry is {key or key_sha256, principal, roles}`);
  }
  return new ApiKeys(list.data);
}

function parseJson(text: string, source: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new StartupError(variable, `${source} is not valid JSON: it must be a JSON list of {key, principal, roles}`);
  }
}

/**
 * Creates a keys file with one random key per role, readable only by its owner, for a first run
 * with no keys configured. There are no built-in default keys.
 */
export function createKeysFile(file: string): { file: string; keys: { key: string; principal: string; roles: Role[] }[] } {
  const keys = (["admin", "coordinator", "operator", "agent"] as const).map((role) => ({
    key: `im_${role}_${randomBytes(24).toString("base64url")}`,
    principal: role === "agent" ? "agent-1" : role,
    roles: [role] as Role[],
  }));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(keys, null, 2) + "\n", { mode: 0o600 });
  // mode applies only when the file is created; an existing file is narrowed too.
  fs.chmodSync(file, 0o600);
  return { file, keys };
}
