import type { Command } from "commander";
import { createClient, type Intentmesh } from "@intentmesh/sdk";
import { resolveSettings, type Settings } from "./config";
import { UsageError } from "./exit-codes";
import { colorWanted, Output } from "./output";

/** What the program runs against: the process's, or a test's. */
export interface Runtime {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  readStdin: () => Promise<string>;
  /** Aborts on Ctrl-C: streaming commands stop. */
  interrupted: AbortSignal;
}

export interface GlobalFlags {
  profile?: string;
  url?: string;
  agent?: string;
  json?: boolean;
  color?: boolean;
}

export interface Context {
  client: Intentmesh;
  settings: Settings;
  out: Output;
  runtime: Runtime;
  /** The acting agent, required by the command. */
  agentId(): string;
}

/** The output alone (commands that need no server: config, completion). */
export function outputFor(command: Command, runtime: Runtime): Output {
  const flags = command.optsWithGlobals<GlobalFlags>();
  return new Output({ json: Boolean(flags.json), color: colorWanted(runtime.stdout, runtime.env, flags.color), write: (text) => void runtime.stdout.write(text) });
}

export function contextFor(command: Command, runtime: Runtime): Context {
  const flags = command.optsWithGlobals<GlobalFlags>();
  const settings = resolveSettings({ profile: flags.profile, url: flags.url, agent: flags.agent }, runtime.env);
  const client = createClient({ baseUrl: settings.url, apiKey: settings.apiKey, agentId: settings.agentId, timeoutMs: 30_000 });
  return {
    client,
    settings,
    out: outputFor(command, runtime),
    runtime,
    agentId: () => {
      if (!settings.agentId) throw new UsageError("this command acts as an agent: pass --agent <id>, set INTENTMESH_AGENT_ID, or give the profile an agent_id");
      return settings.agentId;
    },
  };
}

/** A JSON argument, or a usage error naming it. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} must be JSON (got ${JSON.stringify(text.slice(0, 60))})`);
  }
}

export function parseJsonObject(text: string, what: string): Record<string, unknown> {
  const value = parseJson(text, what);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

export function parsePositiveInt(text: string, what: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`${what} must be a positive integer`);
  return value;
}
