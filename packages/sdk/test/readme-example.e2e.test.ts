import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { createIntent } from "../../../test/support/e2e-helpers";

/** The README's agent, as a process of its own, against a real cluster; the test is the human who answers. */
const root = resolve(__dirname, "../../..");
const example = resolve(__dirname, "../examples/agent.ts");
let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

it("the README shows examples/agent.ts as it is", () => {
  const readme = readFileSync(resolve(__dirname, "../README.md"), "utf8");
  const block = /## An agent in 20 lines[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block).toBe(readFileSync(example, "utf8"));
  expect(block!.trimEnd().split("\n").length).toBeLessThanOrEqual(22);
});

it("the README's agent claims a task, asks a human, and completes the task with the answer", async () => {
  const intent = await createIntent(cluster, { title: "Launch post" });
  const task = await cluster.sdk("coordinator").send("tasksCreate", { intent_id: intent.id, body: { title: "the launch post" } });
  expect(task.status).toBe(201);

  const child = spawn(process.execPath, ["--import", "tsx", example], {
    cwd: root,
    env: { ...process.env, INTENTMESH_URL: cluster.baseUrl, INTENTMESH_API_KEY: TEST_KEYS.agent, INTENT_ID: intent.id },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  try {
    let suspension: { id: string; question: string } | undefined;
    await vi.waitFor(
      async () => {
        const current = await cluster.sdk().ops.intentsGet({ intent_id: intent.id });
        expect(current.status, output).toBe("suspended_awaiting_input");
        // The suspension record the server keeps in the intent's state (spec 4.5): free-form JSON to the catalogue.
        suspension = current.state._suspension as typeof suspension;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(suspension!.question).toBe('Publish "the launch post" now?');
    const answered = await cluster.sdk("operator").send("governanceRespond", { intent_id: intent.id, body: { suspension_id: suspension!.id, value: "yes" } });
    expect(answered.status).toBe(200);
    expect(await exited, output).toBe(0);
  } finally {
    child.kill("SIGKILL");
  }
  expect(output).toContain("completed 1 task(s)");
  const done = await cluster.sdk().ops.tasksGet({ task_id: task.data.id });
  expect(done).toMatchObject({ status: "completed", assigned_agent: "writer-1", output: { published: true } });
  expect((await cluster.sdk().ops.agentsGet({ agent_id: "writer-1" })).status).toBe("deregistered");
}, 60_000);
