import { run } from "./program";
import type { Runtime } from "./context";

/** The process's runtime: its streams, environment, and Ctrl-C. */
function processRuntime(): Runtime {
  const interrupt = new AbortController();
  process.once("SIGINT", () => interrupt.abort());
  process.once("SIGTERM", () => interrupt.abort());
  return {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    interrupted: interrupt.signal,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString("utf8");
    },
  };
}

const code = await run(process.argv.slice(2), processRuntime());
// Streams may hold the event loop (an SSE connection closing): the exit code is decided, leave now.
process.stdout.write("", () => process.exit(code));
