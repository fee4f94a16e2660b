import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { UsageError } from "./exit-codes";

/** One server and identity: where, with which key, acting as which agent. */
export interface Profile {
  url?: string;
  api_key?: string;
  agent_id?: string;
}

export interface ConfigFile {
  /** The profile used when none is named. */
  current?: string;
  profiles: Record<string, Profile>;
}

/** What a command runs with, and where each value came from (for `config show`). */
export interface Settings {
  url: string;
  apiKey: string | undefined;
  agentId: string | undefined;
  profile: string;
  sources: Record<"url" | "apiKey" | "agentId", "flag" | "env" | "profile" | "none">;
}

/**
 * The profile file: $INTENTMESH_CONFIG, else $XDG_CONFIG_HOME/intentmesh/config.json, else
 * ~/.config/intentmesh/config.json. It holds API keys, so it is written readable by its owner only.
 */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INTENTMESH_CONFIG) return env.INTENTMESH_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config");
  return path.join(base, "intentmesh", "config.json");
}

export function readConfig(file = configPath()): ConfigFile {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { profiles: {} };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${file} is not valid JSON; fix it or remove it`);
  }
  const config = parsed as Partial<ConfigFile>;
  if (typeof config !== "object" || config === null || (config.profiles !== undefined && typeof config.profiles !== "object")) {
    throw new UsageError(`${file} is not an intentmesh profile file ({"current": "...", "profiles": {...}})`);
  }
  return { current: config.current, profiles: config.profiles ?? {} };
}

export function writeConfig(config: ConfigFile, file = configPath()): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temp, file);
}

/**
 * Flags win over the environment (INTENTMESH_URL, INTENTMESH_API_KEY, INTENTMESH_AGENT_ID), which
 * wins over the profile (--profile, else INTENTMESH_PROFILE, else the file's current profile).
 */
export function resolveSettings(flags: { profile?: string; url?: string; agent?: string }, env: NodeJS.ProcessEnv = process.env): Settings {
  const config = readConfig(configPath(env));
  const name = flags.profile ?? env.INTENTMESH_PROFILE ?? config.current ?? "default";
  const profile = config.profiles[name];
  if ((flags.profile || env.INTENTMESH_PROFILE) && !profile) throw new UsageError(`no profile named ${name} in ${configPath(env)} (intentmesh config set ${name} --server <url>)`);
  const pick = (flag: string | undefined, envValue: string | undefined, fromProfile: string | undefined) =>
    flag ? { value: flag, source: "flag" as const } : envValue ? { value: envValue, source: "env" as const } : fromProfile ? { value: fromProfile, source: "profile" as const } : { value: undefined, source: "none" as const };
  const url = pick(flags.url, env.INTENTMESH_URL, profile?.url);
  const apiKey = pick(undefined, env.INTENTMESH_API_KEY, profile?.api_key);
  const agentId = pick(flags.agent, env.INTENTMESH_AGENT_ID, profile?.agent_id);
  if (!url.value) throw new UsageError("no server configured: set INTENTMESH_URL (and INTENTMESH_API_KEY), or run `intentmesh config set <profile> --server <url> --api-key-stdin`");
  return { url: url.value, apiKey: apiKey.value, agentId: agentId.value, profile: name, sources: { url: url.source, apiKey: apiKey.source, agentId: agentId.source } };
}

/** A key shown without giving it away. */
export const maskKey = (key: string | undefined) => (key ? `…${key.slice(-4)} (${key.length} characters)` : "(none)");
