import type { Command } from "commander";
import { configPath, maskKey, readConfig, resolveSettings, writeConfig } from "../config";
import { outputFor, type GlobalFlags, type Runtime } from "../context";
import { UsageError } from "../exit-codes";

export function registerConfig(program: Command, runtime: Runtime): void {
  const config = program.command("config").description("profiles: which server, which key, which agent (the file is readable by you only)");
  config
    .command("set")
    .description("create or update a profile; the first one becomes current")
    .argument("<profile>", "profile name")
    .option("--server <url>", "the server's root URL, e.g. http://127.0.0.1:8080")
    .option("--api-key-stdin", "read the API key from standard input (keeps it out of shell history)")
    .option("--agent-id <id>", "act as this agent (X-Agent-ID)")
    .option("--use", "make it the current profile")
    .action(async (name: string, options: { server?: string; apiKeyStdin?: boolean; agentId?: string; use?: boolean }, command: Command) => {
      const out = outputFor(command, runtime);
      const file = configPath(runtime.env);
      const current = readConfig(file);
      const profile = { ...current.profiles[name] };
      if (options.server) {
        if (!/^https?:\/\/[^\s]+$/i.test(options.server)) throw new UsageError("--server must be an http:// or https:// URL");
        profile.url = options.server;
      }
      if (options.agentId) profile.agent_id = options.agentId;
      if (options.apiKeyStdin) {
        const key = (await runtime.readStdin()).trim();
        if (!key) throw new UsageError("--api-key-stdin read no key from standard input");
        profile.api_key = key;
      }
      const next = { current: options.use || !current.current ? name : current.current, profiles: { ...current.profiles, [name]: profile } };
      writeConfig(next, file);
      if (out.json) return out.data({ profile: name, current: next.current === name, path: file });
      out.line(`profile ${out.style(name, "bold")} saved in ${file}${next.current === name ? " (current)" : ""}`);
    });

  config
    .command("use")
    .description("make a profile the current one")
    .argument("<profile>", "profile name")
    .action(async (name: string, _options: unknown, command: Command) => {
      const file = configPath(runtime.env);
      const current = readConfig(file);
      if (!current.profiles[name]) throw new UsageError(`no profile named ${name} in ${file}`);
      writeConfig({ ...current, current: name }, file);
      outputFor(command, runtime).line(`current profile: ${name}`);
    });

  config
    .command("show")
    .description("the settings a command would use, and where each comes from (flag, env, profile)")
    .action(async (_options: unknown, command: Command) => {
      const out = outputFor(command, runtime);
      const flags = command.optsWithGlobals<GlobalFlags>();
      const settings = resolveSettings({ profile: flags.profile, url: flags.url, agent: flags.agent }, runtime.env);
      if (out.json) return out.data({ profile: settings.profile, url: settings.url, api_key: maskKey(settings.apiKey), agent_id: settings.agentId ?? null, sources: settings.sources, path: configPath(runtime.env) });
      out.fields([
        ["file", configPath(runtime.env)],
        ["profile", settings.profile],
        ["server", `${settings.url} (${settings.sources.url})`],
        ["api key", `${maskKey(settings.apiKey)} (${settings.sources.apiKey})`],
        ["agent", `${settings.agentId ?? "(none)"} (${settings.sources.agentId})`],
      ]);
    });

  config
    .command("path")
    .description("where the profile file is")
    .action((_options: unknown, command: Command) => outputFor(command, runtime).line(configPath(runtime.env)));
}
