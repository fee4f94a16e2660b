import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { createIntent, uniqueTag } from "../../../test/support/e2e-helpers";
import { createClient, requestInput } from "@intentmesh/sdk";
import type { Command } from "commander";
import { buildCli } from "../scripts/build";
import { buildProgram } from "../src/program";

/**
 * The real `intentmesh` binary (built once into a temporary directory, run with plain node)
 * against the whole cluster, reading what it prints and its exit code.
 */
const work = fs.mkdtempSync(path.join(os.tmpdir(), "im-cli-"));
let binary: string;
let cluster: TestCluster;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  key?: keyof typeof TEST_KEYS | null;
  agent?: string;
  env?: Record<string, string | undefined>;
  stdin?: string;
}

/** A clean environment: no colour forced, an empty profile file of the test's own, the cluster's URL and key unless told otherwise. */
function environment(options: RunOptions): NodeJS.ProcessEnv {
  const key = options.key === undefined ? "admin" : options.key;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: work, INTENTMESH_CONFIG: path.join(work, "none.json"), INTENTMESH_URL: cluster.baseUrl };
  if (key) env.INTENTMESH_API_KEY = TEST_KEYS[key];
  if (options.agent) env.INTENTMESH_AGENT_ID = options.agent;
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

function cli(args: string[], options: RunOptions = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [binary, ...args], { env: environment(options), timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    else child.stdin!.end();
  });
}

/** A long-running command (watch, tail), read as it prints. */
function start(args: string[], options: RunOptions = {}): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [binary, ...args], { env: environment(options), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : null))));
  return { child, output: () => output, exit };
}

const json = <T = any>(result: Result): T => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
};

beforeAll(async () => {
  [binary, cluster] = await Promise.all([buildCli(path.join(work, "intentmesh.mjs")), startTestCluster()]);
});

afterAll(async () => {
  await cluster?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

describe("help, completion and the binary", () => {
  it("answers --help on every command, exit 0", async () => {
    const paths: string[][] = [];
    const walk = (command: Command, prefix: string[]) => {
      for (const sub of command.commands) {
        paths.push([...prefix, sub.name()]);
        walk(sub, [...prefix, sub.name()]);
      }
    };
    walk(buildProgram({ env: {}, stdout: { write: () => true }, stderr: { write: () => true }, readStdin: async () => "", interrupted: new AbortController().signal }), []);
    expect(paths.length).toBeGreaterThan(25);
    for (const commandPath of [[], ...paths]) {
      const result = await cli([...commandPath, "--help"]);
      expect(result.code, commandPath.join(" ")).toBe(0);
      expect(result.stdout, commandPath.join(" ")).toContain(`Usage: intentmesh${commandPath.length ? ` ${commandPath.join(" ")}` : ""}`);
    }
  }, 120_000);

  it("prints a bash completion that completes commands, subcommands and options", async () => {
    const script = (await cli(["completion", "bash"])).stdout;
    fs.writeFileSync(path.join(work, "completion.bash"), script);
    const complete = (words: string[]) =>
      new Promise<string>((resolve, reject) => {
        const line = `source ${path.join(work, "completion.bash")}; COMP_WORDS=(${words.map((w) => `"${w}"`).join(" ")}); COMP_CWORD=${words.length - 1}; _intentmesh_complete; echo "\${COMPREPLY[*]}"`;
        execFile("bash", ["-c", line], (error, stdout) => (error ? reject(error) : resolve(stdout.trim())));
      });
    expect((await complete(["intentmesh", "in"])).split(" ")).toEqual(["intents"]);
    expect((await complete(["intentmesh", "intents", ""])).split(" ")).toEqual(expect.arrayContaining(["list", "show", "create", "watch"]));
    expect((await complete(["intentmesh", "--json", "agents", "d"])).split(" ")).toEqual(["drain"]);
    expect((await complete(["intentmesh", "events", "tail", "--c"])).split(" ")).toEqual(["--count"]);
    for (const shell of ["zsh", "fish"]) {
      const result = await cli(["completion", shell]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("intentmesh");
    }
    expect((await cli(["completion", "tcsh"])).code).toBe(2);
  });

  it("bin/intentmesh.mjs runs the sources through tsx when nothing is built", async () => {
    const bin = path.resolve(__dirname, "../bin/intentmesh.mjs");
    const version = await new Promise<string>((resolve, reject) => execFile(process.execPath, [bin, "--version"], (error, stdout) => (error ? reject(error) : resolve(stdout.trim()))));
    expect(version).toBe("0.1.0");
  });
});

describe("configuration", () => {
  it("keeps a profile (key from stdin, file readable by its owner only), and lets the environment and flags win over it", async () => {
    const config = path.join(work, `profiles-${uniqueTag()}.json`);
    const noEnv = { INTENTMESH_CONFIG: config, INTENTMESH_URL: undefined, INTENTMESH_API_KEY: undefined };
    const saved = await cli(["config", "set", "local", "--server", cluster.baseUrl, "--api-key-stdin", "--agent-id", "ops-bot"], { key: null, env: noEnv, stdin: `${TEST_KEYS.operator}\n` });
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stdout).toContain("profile local saved");
    expect(fs.statSync(config).mode & 0o777).toBe(0o600);
    const shown = json(await cli(["config", "show", "--json"], { key: null, env: noEnv }));
    expect(shown).toMatchObject({ profile: "local", url: cluster.baseUrl, agent_id: "ops-bot", sources: { url: "profile", apiKey: "profile", agentId: "profile" } });
    expect(JSON.stringify(shown)).not.toContain(TEST_KEYS.operator);
    // The profile alone is enough to work.
    expect((await cli(["intents", "list"], { key: null, env: noEnv })).code).toBe(0);
    // The environment wins over the profile, a flag over both.
    const overridden = json(await cli(["--agent", "flag-bot", "config", "show", "--json"], { key: "admin", env: { INTENTMESH_CONFIG: config } }));
    expect(overridden.sources).toEqual({ url: "env", apiKey: "env", agentId: "flag" });
    expect(overridden.agent_id).toBe("flag-bot");
    // A second profile, then switching.
    expect((await cli(["config", "set", "other", "--server", "http://127.0.0.1:9"], { key: null, env: noEnv })).code).toBe(0);
    expect(json(await cli(["--profile", "other", "config", "show", "--json"], { key: null, env: noEnv })).url).toBe("http://127.0.0.1:9");
    expect((await cli(["config", "use", "other"], { key: null, env: noEnv })).code).toBe(0);
    expect(json(await cli(["config", "show", "--json"], { key: null, env: noEnv })).profile).toBe("other");
    expect((await cli(["--profile", "missing", "intents", "list"], { key: null, env: noEnv })).code).toBe(2);
  });

  it("without any server configured, says how to configure one (exit 2)", async () => {
    const result = await cli(["intents", "list"], { key: null, env: { INTENTMESH_URL: undefined } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("INTENTMESH_URL");
  });
});

describe("intents", () => {
  it("create, list and show: tables for people, JSON for scripts, colour only when asked or on a terminal", async () => {
    const title = uniqueTag("cli-intent");
    const created = json(await cli(["intents", "create", title, "--active", "--state", '{"draft":"v1"}', "--json"]));
    expect(created).toMatchObject({ title, status: "active", state: { draft: "v1" }, version: 1 });
    const human = await cli(["intents", "create", `${title}-draft`]);
    expect(human.stdout).toMatch(/^created [0-9a-f-]{36} \(draft, version 1\)\n$/);

    const table = await cli(["intents", "list", "--status", "active"]);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+STATUS\s+V\s+UPDATED\s+TITLE$/);
    expect(table.stdout).toContain(title);
    expect(table.stdout).toMatch(/just now|ago/);
    expect(table.stdout).not.toContain("\u001b[");
    expect((await cli(["intents", "list"], { env: { FORCE_COLOR: "1" } })).stdout).toContain("\u001b[");
    expect((await cli(["--no-color", "intents", "list"], { env: { FORCE_COLOR: "1" } })).stdout).not.toContain("\u001b[");
    const listed = json<{ id: string; title: string }[]>(await cli(["intents", "list", "--status", "active", "--json", "--limit", "500"]));
    expect(listed.map((i) => i.id)).toContain(created.id);

    const shown = await cli(["intents", "show", created.id]);
    expect(shown.stdout).toMatch(/intent\s+[0-9a-f-]{36}/);
    expect(shown.stdout).toMatch(/status\s+active/);
    expect(shown.stdout).toContain('{"draft":"v1"}');
    expect(json(await cli(["intents", "show", created.id, "--json"])).version).toBe(1);
  });

  it("watch an intent, list the suspension, answer it: the watch shows the question, the answer and the end", async () => {
    const intent = await createIntent(cluster, { title: "Launch post" });
    const watch = start(["intents", "watch", intent.id]);
    await vi.waitFor(() => expect(watch.output()).toContain("-- watching"), { timeout: 15_000 });

    const agent = createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS.agent, agentId: "writer-1" });
    const asked = requestInput(agent, intent.id, {
      question: "Publish now?",
      choices: [
        { value: "yes", label: "Publish" },
        { value: "no", label: "Hold" },
      ],
      timeoutSeconds: 3600,
    });
    asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    await vi.waitFor(() => expect(watch.output()).toContain("asks: Publish now? [yes/no]  (choice)"), { timeout: 15_000 });

    const listed = await cli(["suspensions", "list"], { key: "operator" });
    expect(listed.stdout.split("\n")[0]).toMatch(/^INTENT\s+ASKED\s+EXPIRES\s+TYPE\s+CHOICES\s+QUESTION$/);
    expect(listed.stdout).toMatch(new RegExp(`${intent.id}.*in 59m.*choice\\s+yes/no\\s+Publish now\\?`));
    const shown = await cli(["intents", "show", intent.id], { key: "operator" });
    expect(shown.stdout).toContain("waiting for an answer:");
    expect(shown.stdout).toContain(`intentmesh respond ${intent.id} <answer>`);

    const wrong = await cli(["respond", intent.id, "maybe"], { key: "operator" });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("yes, no");
    const answered = await cli(["respond", intent.id, "yes"], { key: "operator" });
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toBe(`answered "yes" (Publish): intent ${intent.id} resumes\n`);
    expect((await asked).value).toBe("yes");
    expect((await cli(["respond", intent.id, "yes"], { key: "operator" })).code).toBe(4);

    await vi.waitFor(() => expect(watch.output()).toContain("intent.resumed"), { timeout: 15_000 });
    const current = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
    await cluster.sdk().ops.intentsTransition({ intent_id: intent.id, ifMatch: current.version, body: { status: "completed" } });
    expect(await watch.exit).toBe(0);
    const lines = watch.output().split("\n");
    expect(lines.some((l) => /#\d+\s+status_changed\s+\S+\s+active → suspended_awaiting_input/.test(l))).toBe(true);
    expect(lines.some((l) => /intent\.resumed\s+\S+\s+answered "yes" by operator/.test(l))).toBe(true);
    expect(lines.some((l) => /status_changed\s+\S+\s+active → completed/.test(l))).toBe(true);
  }, 60_000);

  it("a watch stops on Ctrl-C with exit 130", async () => {
    const intent = await createIntent(cluster);
    const watch = start(["intents", "watch", intent.id]);
    await vi.waitFor(() => expect(watch.output()).toContain("-- watching"), { timeout: 15_000 });
    watch.child.kill("SIGINT");
    expect(await watch.exit).toBe(130);
  });
});

describe("events", () => {
  it("tail prints events live and resumes after a given event", async () => {
    const intent = await createIntent(cluster);
    for (const n of [1, 2, 3]) await cluster.sdk().ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "progress", payload: { n } } });
    const first = await cli(["events", "tail", intent.id, "--from-start", "--count", "2", "--json"]);
    const events = first.stdout.trim().split("\n").map((line) => JSON.parse(line) as { sequence: number; event_type: string });
    expect(events.map((e) => e.event_type)).toEqual(["intent_created", "progress"]);
    const resumed = await cli(["events", "tail", intent.id, "--after", String(events[1]!.sequence), "--count", "2"]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/#3\s+progress\s+admin\s+\{"n":2\}\n.*#4\s+progress\s+admin\s+\{"n":3\}\n$/);

    // Resuming after #4: deterministic however long the process takes to start.
    const live = start(["events", "tail", intent.id, "--after", "4", "--until", "done"]);
    await cluster.sdk().ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "done", payload: {} } });
    expect(await live.exit).toBe(0);
    expect(live.output()).toMatch(/#5\s+done/);
  }, 30_000);
});

describe("approvals", () => {
  it("list, approve and deny", async () => {
    const intent = await createIntent(cluster);
    const ask = (action: string) => cluster.sdk("agent").ops.governanceCreateApproval({ intent_id: intent.id, body: { action } });
    const one = await ask("complete");
    const two = await ask("publish");
    const listed = await cli(["approvals", "list", intent.id], { key: "operator" });
    expect(listed.stdout.split("\n")[0]).toMatch(/^APPROVAL\s+STATUS\s+ACTION\s+BY\s+ASKED\s+REASON$/);
    expect(listed.stdout).toContain(one.id);
    expect(listed.stdout).toContain(two.id);
    expect((await cli(["approvals", "approve", intent.id, one.id, "--reason", "fine"], { key: "operator" })).stdout).toBe(`${one.id} approved (complete)\n`);
    expect((await cli(["approvals", "deny", intent.id, two.id], { key: "operator" })).stdout).toBe(`${two.id} denied (publish)\n`);
    expect((await cli(["approvals", "approve", intent.id, two.id], { key: "operator" })).code).toBe(4);
    expect(json<unknown[]>(await cli(["approvals", "list", intent.id, "--json"]))).toEqual([]);
    expect(json<unknown[]>(await cli(["approvals", "list", intent.id, "--status", "all", "--json"]))).toHaveLength(2);
    // An agent key may not decide.
    expect((await cli(["approvals", "approve", intent.id, one.id], { key: "agent" })).code).toBe(5);
  });
});

describe("agents", () => {
  it("list, show, drain", async () => {
    const agentId = uniqueTag("cli-agent");
    await cluster.sdk("agent").ops.agentsRegister({ body: { agent_id: agentId, capabilities: ["write"] } });
    const listed = await cli(["agents", "list", "--capability", "write"], { key: "coordinator" });
    expect(listed.stdout.split("\n")[0]).toMatch(/^AGENT\s+STATUS\s+ROLE\s+LOAD\s+HEARTBEAT\s+CAPABILITIES$/);
    expect(listed.stdout).toMatch(new RegExp(`${agentId}\\s+active`));
    expect((await cli(["agents", "show", agentId], { key: "coordinator" })).stdout).toMatch(/status\s+active/);
    const drained = await cli(["agents", "drain", agentId, "--reason", "scale down"], { key: "coordinator" });
    expect(drained.stdout).toBe(`${agentId} is draining\n`);
    expect(json(await cli(["agents", "show", agentId, "--json"], { key: "coordinator" })).status).toBe("draining");
    expect((await cli(["agents", "show", "no-such-agent"], { key: "coordinator" })).code).toBe(3);
  });
});

describe("tasks", () => {
  it("create, list, claim, complete as an agent", async () => {
    const intent = await createIntent(cluster);
    const task = json(await cli(["tasks", "create", intent.id, "summarise", "--input", '{"words":50}', "--json"], { key: "coordinator" }));
    expect(task).toMatchObject({ title: "summarise", status: "ready", input: { words: 50 } });
    expect((await cli(["tasks", "create", intent.id, "not mine"], { key: "agent" })).code).toBe(5);
    const listed = await cli(["tasks", "list", intent.id]);
    expect(listed.stdout).toMatch(new RegExp(`${task.id}\\s+ready\\s+-\\s+0`));
    const agent = uniqueTag("tasker");
    expect((await cli(["tasks", "claim", task.id], { key: "agent" })).code).toBe(2); // no acting agent
    const claimed = await cli(["tasks", "claim", task.id], { key: "agent", agent });
    expect(claimed.stdout).toBe(`${task.id} claimed (${agent}): summarise\n`);
    expect((await cli(["tasks", "claim", task.id], { key: "other", agent: uniqueTag("late") })).code).toBe(4);
    const completed = await cli(["tasks", "complete", task.id, "--output", '{"summary":"short"}', "--json"], { key: "agent", agent });
    expect(json(completed)).toMatchObject({ status: "completed", output: { summary: "short" }, assigned_agent: agent });
    expect((await cli(["tasks", "complete", task.id, "--output", "[1]"], { key: "agent", agent })).code).toBe(2);
  });
});

describe("channels", () => {
  it("send and tail", async () => {
    const intent = await createIntent(cluster);
    const channel = await cluster.sdk().ops.channelsCreate({ intent_id: intent.id, body: { name: uniqueTag("ch") } });
    // From the start of the (empty) channel: deterministic however long the process takes to start.
    const tail = start(["channels", "tail", channel.id, "--after", "0", "--count", "2"]);
    const sent = await cli(["channels", "send", channel.id, '{"text":"hello"}', "--type", "broadcast"], { key: "agent", agent: "chatty" });
    expect(sent.stdout).toMatch(/^sent #1 [0-9a-f-]{36} \(broadcast to \*\)\n$/);
    await cli(["channels", "send", channel.id, '{"text":"again"}'], { key: "agent", agent: "chatty" });
    expect(await tail.exit).toBe(0);
    expect(tail.output()).toMatch(/#1\s+broadcast\s+chatty → \*\s+\{"text":"hello"\}/);
    expect(tail.output()).toMatch(/#2\s+notify\s+chatty → \*\s+\{"text":"again"\}/);
    const replay = await cli(["channels", "tail", channel.id, "--after", "1", "--count", "1", "--json"]);
    expect(JSON.parse(replay.stdout)).toMatchObject({ sequence: 2, payload: { text: "again" } });
  }, 30_000);
});

describe("memory", () => {
  it("set creates then updates an entry; get reads it", async () => {
    const agent = uniqueTag("rememberer");
    await cluster.sdk("agent").ops.agentsRegister({ body: { agent_id: agent } });
    const created = await cli(["memory", "set", "drafts", "launch", '{"text":"v1"}', "--type", "episodic"], { key: "agent", agent });
    expect(created.stdout).toBe("drafts/launch at version 1 (episodic)\n");
    expect((await cli(["memory", "set", "drafts", "launch", '{"text":"v2"}', "--type", "episodic"], { key: "agent", agent })).stdout).toBe("drafts/launch at version 2 (episodic)\n");
    const read = await cli(["memory", "get", "drafts", "launch"], { key: "agent", agent });
    expect(read.stdout).toMatch(/memory\s+episodic, version 2/);
    expect(read.stdout).toContain('{"text":"v2"}');
    expect(json(await cli(["memory", "get", "drafts", "launch", "--json"], { key: "agent", agent })).value).toEqual({ text: "v2" });
    expect((await cli(["memory", "get", "drafts", "missing"], { key: "agent", agent })).code).toBe(3);
  });
});

describe("exit codes", () => {
  it("tell scripts what happened", async () => {
    const notFound = await cli(["intents", "show", "00000000-0000-4000-8000-000000000000"]);
    expect(notFound.code).toBe(3);
    expect(notFound.stderr).toMatch(/^intentmesh: INTENT_NOT_FOUND: /);
    expect(JSON.parse((await cli(["intents", "show", "00000000-0000-4000-8000-000000000000", "--json"])).stderr)).toMatchObject({ error: { code: "INTENT_NOT_FOUND", status: 404 } });
    expect((await cli(["intents", "list"], { env: { INTENTMESH_API_KEY: "not-a-key" } })).code).toBe(5);
    expect((await cli(["intents", "list", "--status", "sideways"])).code).toBe(6);
    expect((await cli(["intents", "create", "x", "--state", "[]"])).code).toBe(2);
    expect((await cli(["intents", "frobnicate"])).code).toBe(2);
    expect((await cli(["intents", "show"])).code).toBe(2);
    expect((await cli(["intents", "list"], { env: { INTENTMESH_URL: "http://127.0.0.1:9" } })).code).toBe(7);
  });
});
