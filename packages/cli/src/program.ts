import { Command, CommanderError } from "commander";
import { IntentmeshError } from "@intentmesh/sdk";
import type { Runtime } from "./context";
import { EXIT, exitCodeOf } from "./exit-codes";
import { registerAgents } from "./commands/agents";
import { registerApprovals } from "./commands/approvals";
import { registerChannels } from "./commands/channels";
import { registerConfig } from "./commands/config";
import { registerEvents } from "./commands/events";
import { registerIntents } from "./commands/intents";
import { registerMemory } from "./commands/memory";
import { registerSuspensions } from "./commands/suspensions";
import { registerTasks } from "./commands/tasks";
import { registerCompletion } from "./completion";

export const VERSION = "0.1.0";

export function buildProgram(runtime: Runtime): Command {
  const program = new Command("intentmesh");
  // Before any subcommand exists: they inherit both.
  program.exitOverride();
  program.configureOutput({ writeOut: (text) => void runtime.stdout.write(text), writeErr: (text) => void runtime.stderr.write(text) });
  program
    .description("The intentmesh command line: intents, suspensions, approvals, agents, tasks, channels, memory.\nServer and key: a profile (intentmesh config), or INTENTMESH_URL and INTENTMESH_API_KEY.")
    .version(VERSION)
    .option("--profile <name>", "use this profile of the profile file (else INTENTMESH_PROFILE, else the current one)")
    .option("--url <url>", "the server's root URL (else INTENTMESH_URL, else the profile)")
    .option("--agent <id>", "act as this agent (X-Agent-ID; else INTENTMESH_AGENT_ID, else the profile)")
    .option("--json", "print JSON (one document, or one event per line for streams) instead of tables")
    .option("--no-color", "no colours even on a terminal (NO_COLOR works too)")
    .showHelpAfterError("(add --help for usage)")
    .addHelpText(
      "after",
      `
Exit codes: 0 ok, 1 unexpected, 2 usage, 3 not found, 4 conflict (re-read and retry),
5 refused (key or role), 6 invalid input, 7 server unavailable, 8 outcome unknown, 130 interrupted.`,
    );
  registerIntents(program, runtime);
  registerEvents(program, runtime);
  registerSuspensions(program, runtime);
  registerApprovals(program, runtime);
  registerAgents(program, runtime);
  registerTasks(program, runtime);
  registerChannels(program, runtime);
  registerMemory(program, runtime);
  registerConfig(program, runtime);
  registerCompletion(program, runtime);
  return program;
}

/** Runs one command line; answers its exit code. */
export async function run(argv: readonly string[], runtime: Runtime): Promise<number> {
  const program = buildProgram(runtime);
  try {
    await program.parseAsync(argv as string[], { from: "user" });
    return EXIT.OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return EXIT.OK;
      // A group run without its subcommand shows its help: a usage mistake for a script.
      return EXIT.USAGE;
    }
    const code = exitCodeOf(error);
    if (code === EXIT.INTERRUPTED) return code;
    report(runtime, error, program.opts<{ json?: boolean }>().json === true);
    return code;
  }
}

function report(runtime: Runtime, error: unknown, json: boolean): void {
  if (json) {
    const body = error instanceof IntentmeshError ? { code: error.code, status: error.status, message: error.message, details: error.details, request_id: error.requestId } : { code: "FAILURE", message: String((error as Error)?.message ?? error) };
    runtime.stderr.write(`${JSON.stringify({ error: body })}\n`);
    return;
  }
  if (error instanceof IntentmeshError) {
    const where = error.requestId ? ` (request ${error.requestId})` : "";
    runtime.stderr.write(`intentmesh: ${error.code}: ${error.message}${where}\n`);
    return;
  }
  runtime.stderr.write(`intentmesh: ${(error as Error)?.message ?? String(error)}\n`);
}
