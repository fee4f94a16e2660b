import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { ManualClock } from "@intentmesh/contracts";
import { startTestCluster, TEST_KEYS, type TestCluster } from "../../../test/support/cluster";
import { createIntent, uniqueTag } from "../../../test/support/e2e-helpers";
import { createClient, requestApproval, requestInput, type Intentmesh } from "@intentmesh/sdk";
import { buildConsole } from "../scripts/build";

/**
 * The console in a real browser (Debian's Chromium driven by playwright-core) against a real
 * cluster: an agent's question answered in the inbox ends the agent's wait with that answer, an
 * approval approved from the keyboard, an event appended by another client in the live log within
 * a second, the agents' drain by role, the outage banner. The screenshots of docs/console.md are
 * taken here. Nothing is skipped: without Chromium the file fails and says how to install it
 * (.ci/run installs it).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// The screenshots of docs/console.md are refreshed with UPDATE_SCREENSHOTS=1; an ordinary run writes
// them under .data so that `pnpm test` leaves the working tree as it found it.
const SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? path.resolve(__dirname, "../../../docs/console") : path.resolve(__dirname, "../../../.data/console-screenshots");
// Shorter than the inbox's 30 s safety read: an item asked after sign-in can only arrive in time
// through the inbox stream (GET /subscribe/inbox).
const INBOX_WAIT = { timeout: 15_000 };

let cluster: TestCluster;
let browser: Browser;
const clock = new ManualClock(new Date());
const client = (key: keyof typeof TEST_KEYS, agentId?: string): Intentmesh => createClient({ baseUrl: cluster.baseUrl, apiKey: TEST_KEYS[key], agentId, retry: { baseDelayMs: 10 } });

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: the console's browser tests need it. Install it with \`apt-get install -y chromium\` (.ci/run does), or set CHROMIUM_PATH.`);
  }
  // The files the gateway serves are built from the sources under test, not left from an older install.
  const firstLoad = await buildConsole();
  expect(firstLoad.js_gzip_bytes).toBeLessThan(200 * 1024);
  cluster = await startTestCluster({ clock });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  fs.mkdirSync(SHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

async function signedIn(key: keyof typeof TEST_KEYS, options: { colorScheme?: "dark" | "light"; viewport?: { width: number; height: number } } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ colorScheme: options.colorScheme ?? "light", viewport: options.viewport ?? { width: 1280, height: 860 } });
  // A step that cannot happen fails with what it waited for, well before the test's own timeout.
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  await page.goto(`${cluster.baseUrl}/console`);
  await page.getByLabel("API key").fill(TEST_KEYS[key]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
  return { context, page };
}

const shot = (page: Page, name: string, fullPage = false) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });

describe("sign-in", () => {
  it("refuses a wrong key with the server's sentence, and keeps a good one in session storage only, never in the URL", async () => {
    // The gateway's root names the console's address beside the API's.
    expect(((await (await fetch(`${cluster.baseUrl}/`)).json()) as { console: string }).console).toBe("/console/");
    const context = await browser.newContext({ colorScheme: "light" });
    const page = await context.newPage();
    await page.goto(`${cluster.baseUrl}/console/`);
    await shot(page, "sign-in");
    await page.getByLabel("API key").fill("not-a-key-of-this-server");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not valid");

    await page.getByLabel("API key").fill(TEST_KEYS.operator);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('intentmesh.console.key')")).toBe(TEST_KEYS.operator);
    expect(await page.evaluate("JSON.stringify(localStorage)")).not.toContain(TEST_KEYS.operator);
    expect(page.url()).not.toContain(TEST_KEYS.operator);
    // A reload keeps the session (same tab); a new tab's storage starts empty.
    await page.reload();
    await page.getByRole("navigation", { name: "Main" }).waitFor();
    await expect.poll(() => page.getByText("operator (operator)").count()).toBe(1);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").waitFor();
    expect(await page.evaluate("sessionStorage.getItem('intentmesh.console.key')")).toBeNull();
    await context.close();
  });
});

describe("the inbox", () => {
  it("shows an agent's question live, with its context, time left and agent; a click answers it and the agent's wait ends with that answer", async () => {
    const { context, page } = await signedIn("operator");
    const intent = await createIntent(cluster, { title: "Launch post" });
    const agentId = uniqueTag("writer");
    const asked = requestInput(client("agent", agentId), intent.id, {
      question: "Publish the launch post now?",
      choices: [
        { value: "publish", label: "Publish" },
        { value: "hold", label: "Hold until Monday" },
      ],
      context: { draft: "v3", words: 812 },
      timeoutSeconds: 3600,
    });
    asked.catch(() => undefined); // awaited below; a failure before that must not go unhandled

    const card = page.getByRole("article", { name: /Publish the launch post now\?/ });
    await card.waitFor(INBOX_WAIT);
    await expect.poll(() => card.textContent()).toContain(`asked by ${agentId}`);
    expect(await card.textContent()).toMatch(/\d+m \d+s left|\d+h \d+m left/);
    expect(await card.getByLabel("Context").textContent()).toContain('"words": 812');
    await expect.poll(() => page.title()).toBe("(1) intentmesh console");
    await shot(page, "inbox");

    await card.getByRole("button", { name: /Publish/ }).click();
    const answer = await asked;
    expect(answer).toMatchObject({ value: "publish", resolution: "responded", respondedBy: "operator" });
    await card.waitFor({ state: "detached" });
    await expect.poll(() => page.title()).toBe("intentmesh console");
    await page.getByText("Nothing waits for you").waitFor(INBOX_WAIT);
    await context.close();
  });

  it("answers a free-text question from its form", async () => {
    const { context, page } = await signedIn("operator");
    const intent = await createIntent(cluster, { title: "Tone" });
    const asked = requestInput(client("agent", uniqueTag("tone")), intent.id, { question: "Which tone for the release notes?", responseType: "text", timeoutSeconds: 600 });
    asked.catch(() => undefined);
    const card = page.getByRole("article", { name: /Which tone for the release notes\?/ });
    await card.waitFor(INBOX_WAIT);
    await card.getByRole("button", { name: "Send answer" }).click();
    await card.getByText("Write an answer first.").waitFor();
    await card.getByLabel("Answer").fill("warm but brief");
    await card.getByRole("button", { name: "Send answer" }).click();
    expect(await asked).toMatchObject({ value: "warm but brief", resolution: "responded" });
    await context.close();
  });

  it("approves a pending approval from the keyboard (↓ to the item, a to approve); the agent learns it was approved", async () => {
    const { context, page } = await signedIn("operator", { colorScheme: "dark" });
    const intent = await createIntent(cluster, { title: "Release v2" });
    const waiting = requestApproval(client("agent", uniqueTag("deployer")), intent.id, { action: "deploy", reason: "ship v2 to production" });
    waiting.catch(() => undefined);

    const card = page.getByRole("article", { name: "Approval deploy on Release v2" });
    await card.waitFor(INBOX_WAIT);
    await shot(page, "inbox-approval-dark");
    await page.getByRole("list", { name: "Items awaiting an answer" }).locator("[data-item]").first().focus();
    for (let i = 0; i < 5 && !(await card.evaluate((el) => el === el.ownerDocument.activeElement)); i++) await page.keyboard.press("ArrowDown");
    await page.keyboard.press("a");
    const outcome = await waiting;
    expect(outcome.approved).toBe(true);
    expect(outcome.approval).toMatchObject({ status: "approved", decided_by: "operator" });
    await card.waitFor({ state: "detached" });
    await context.close();
  });

  it("shows no answer buttons to an agent's key (the role decides the actions)", async () => {
    const intent = await createIntent(cluster, { title: "Read only" });
    const asked = requestInput(client("other", uniqueTag("asker")), intent.id, { question: "Is this visible to an agent key?", responseType: "confirm", timeoutSeconds: 600 });
    asked.catch(() => undefined);
    const { context, page } = await signedIn("agent");
    const card = page.getByRole("article", { name: /Is this visible to an agent key\?/ });
    await card.waitFor(INBOX_WAIT);
    expect(await card.getByRole("button").count()).toBe(0);
    expect(await page.getByText("may read the inbox but not answer").count()).toBe(1);
    await context.close();
    await client("operator").ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: ((await client("admin").ops.intentsGet({ intent_id: intent.id })).state._suspension as { id: string }).id, value: "yes" } });
    expect((await asked).value).toBe("yes");
  });
});

describe("an intent's page", () => {
  it("shows the state, tasks, costs against the budget, attachments, channels, policy, and an event appended by another client in the live log within a second", async () => {
    const intent = await createIntent(cluster, { title: "Quarterly report", state: { section: "summary", progress: { done: 2, total: 5 } }, constraints: { budget: { max_total_cents: 5000 } } });
    const coordinator = client("coordinator");
    await coordinator.ops.tasksCreate({ intent_id: intent.id, body: { title: "Draft the summary" } });
    await client("agent", "report-writer").ops.costsRecord({ intent_id: intent.id, body: { agent_id: "report-writer", cost_type: "tokens", amount: 1200, unit: "tokens", cents: 1800 } });
    const admin = client("admin");
    await admin.ops.attachmentsCreate({ intent_id: intent.id, body: { filename: "figures.csv", mime_type: "text/csv", size: 120, storage_url: "https://files.example.org/figures.csv" } });
    await admin.ops.channelsCreate({ intent_id: intent.id, body: { name: "review", members: ["admin", "operator"] } });
    await admin.ops.channelsSendByName({ intent_id: intent.id, name: "review", body: { sender: "admin", to: "*", message_type: "broadcast", payload: { note: "table 3 looks off" } } });
    await admin.ops.governancePolicySet({ intent_id: intent.id, ifMatch: intent.version, body: { completion_mode: "require_approval" } });
    const { context, page } = await signedIn("operator");
    await page.goto(`${cluster.baseUrl}/console/#/intents/${intent.id}`);
    await page.getByRole("heading", { name: "Quarterly report" }).waitFor();
    await page.getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    expect(await page.getByRole("region", { name: "State" }).textContent()).toContain("summary");
    expect(await page.getByRole("region", { name: "Tasks" }).textContent()).toContain("Draft the summary");
    await expect.poll(() => page.getByRole("region", { name: "Costs" }).textContent()).toContain("18.00 spent of 50.00 (36%)");
    await expect.poll(() => page.getByRole("region", { name: "Attachments" }).textContent()).toContain("figures.csv");
    await expect.poll(() => page.getByRole("region", { name: "Governance policy" }).textContent()).toContain("require_approval");
    await page.getByRole("region", { name: "Channels" }).getByText("review").click();
    await expect.poll(() => page.getByRole("region", { name: "Channels" }).textContent()).toContain("table 3 looks off");

    const other = client("admin");
    const appended = await other.ops.intentsAppendEvent({ intent_id: intent.id, body: { event_type: "note.added", payload: { text: "numbers checked" } } });
    const started = Date.now();
    await page.locator(`[data-event-type="note.added"]`).waitFor({ timeout: 1000 });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1000);
    expect(await page.locator(`[data-event-type="note.added"]`).textContent()).toContain(`#${appended.sequence}`);
    await shot(page, "intent", true);
    await context.close();
  });
});

describe("an intent's page, in its graph", () => {
  it("shows its parent, its children and its dependencies as links (RFC-0002)", async () => {
    const admin = client("admin");
    const parent = await createIntent(cluster, { title: "Launch plan" });
    const data = await createIntent(cluster, { title: "Data pull" });
    const child = await admin.ops.graphCreateChild({ intent_id: parent.id, body: { title: "Write the brief", depends_on: [data.id] } });
    await admin.ops.graphCreateChild({ intent_id: child.id, body: { title: "Outline" } });
    const { context, page } = await signedIn("operator");
    await page.goto(`${cluster.baseUrl}/console/#/intents/${child.id}`);
    await page.getByRole("heading", { name: "Write the brief" }).waitFor();
    const graph = page.getByRole("region", { name: "Graph" });
    await expect.poll(() => graph.textContent()).toContain("Launch plan");
    const text = await graph.textContent();
    expect(text).toContain("Parent");
    expect(text).toContain("Outline");
    expect(text).toContain("Depends on");
    expect(text).toContain("Data pull");
    await graph.getByRole("link", { name: "Data pull" }).click();
    await page.getByRole("heading", { name: "Data pull" }).waitFor();
    await expect.poll(() => page.getByRole("region", { name: "Graph" }).textContent()).toContain("Needed by");
    expect(await page.getByRole("region", { name: "Graph" }).textContent()).toContain("Write the brief");
    await context.close();
  });
});

describe("an intent's plans", () => {
  it("shows a plan's steps and progress (RFC-0012), and the progress moves when a task completes", async () => {
    const admin = client("admin", uniqueTag("planner"));
    const intent = await createIntent(cluster, { title: "Quarterly report" });
    const gather = await admin.ops.tasksCreate({ intent_id: intent.id, body: { title: "Gather numbers" } });
    const write = await admin.ops.tasksCreate({ intent_id: intent.id, body: { title: "Write summary", depends_on: [gather.id] } });
    await admin.ops.plansCreate({ body: { intent_id: intent.id, title: "Report plan", tasks: [gather.id, write.id], state: "active" } });
    const { context, page } = await signedIn("operator");
    await page.goto(`${cluster.baseUrl}/console/#/intents/${intent.id}`);
    await page.getByRole("heading", { name: "Quarterly report" }).waitFor();
    const plan = page.getByRole("article", { name: "Plan Report plan" });
    await plan.waitFor();
    expect(await plan.textContent()).toContain("0 of 2 done");
    expect(await plan.textContent()).toContain("Gather numbers");
    expect(await plan.textContent()).toContain("Write summary");

    for (const step of ["tasksClaim", "tasksStart"] as const) await admin.ops[step]({ task_id: gather.id, body: {} });
    await admin.ops.tasksComplete({ task_id: gather.id, body: { output: {} } });
    // The page follows the intent's stream: task.completed makes it read the plan again.
    await expect.poll(() => plan.textContent(), { timeout: 10_000 }).toContain("1 of 2 done (50%)");
    await shot(page, "intent-plan");
    await context.close();
  });
});

describe("an intent's page, suspended", () => {
  it("shows the question the intent waits on and answers it there; the agent's wait ends with that answer", async () => {
    const intent = await createIntent(cluster, { title: "Pricing page" });
    const asked = requestInput(client("agent", uniqueTag("pricer")), intent.id, { question: "Which plan goes first?", choices: [{ value: "pro", label: "Pro" }, { value: "team", label: "Team" }], timeoutSeconds: 600 });
    asked.catch(() => undefined);
    const { context, page } = await signedIn("operator");
    await expect.poll(async () => (await client("admin").ops.intentsGet({ intent_id: intent.id })).status, { timeout: 10_000 }).toBe("suspended_awaiting_input");
    await page.goto(`${cluster.baseUrl}/console/#/intents/${intent.id}`);
    const waiting = page.getByRole("region", { name: "Waiting for an answer" });
    await waiting.getByText("Which plan goes first?").waitFor();
    await waiting.getByRole("button", { name: /Team/ }).click();
    expect(await asked).toMatchObject({ value: "team", resolution: "responded", respondedBy: "operator" });
    // The page follows the intent's log: the resumed intent no longer waits.
    await waiting.waitFor({ state: "detached" });
    await context.close();
  });
});

describe("agents", () => {
  it("lists agents with health, heartbeat and load; an admin drains one; an operator's key may not list them and is told so", async () => {
    const agentId = uniqueTag("crawler");
    await client("agent", agentId).ops.agentsRegister({ body: { agent_id: agentId, capabilities: ["crawl", "summarise"], capacity: { max_concurrent_tasks: 4 } } });
    const operator = await signedIn("operator");
    await operator.page.getByRole("link", { name: "Agents" }).click();
    // The registry's list is for coordinators and admins: an operator reads why, and no drain is offered.
    await operator.page.getByText("Your key may not list the agent registry").waitFor();
    expect(await operator.page.getByRole("button", { name: /^Drain/ }).count()).toBe(0);
    expect(await operator.page.getByRole("alert").count()).toBe(0);
    await operator.context.close();

    const { context, page } = await signedIn("admin");
    await page.getByRole("link", { name: "Agents" }).click();
    const row = page.getByRole("row", { name: new RegExp(agentId) });
    await row.waitFor();
    expect(await row.textContent()).toContain("0 / 4");
    await shot(page, "agents");
    page.once("dialog", (dialog) => void dialog.accept());
    await row.getByRole("button", { name: `Drain ${agentId}` }).click();
    await expect.poll(() => row.textContent()).toContain("draining");
    expect((await client("admin").ops.agentsGet({ agent_id: agentId })).status).toBe("draining");
    await context.close();
  });
});

describe("the server down", () => {
  it("shows a banner while the API does not answer, and takes it away by itself when it answers again", async () => {
    const { context, page } = await signedIn("operator", { viewport: { width: 390, height: 800 } });
    await page.getByText(/Nothing waits for you|question|approval/).first().waitFor(INBOX_WAIT);
    await page.route("**/api/v1/**", (route) => route.abort("connectionrefused"));
    // The inbox stream already open is not cut by the route: the next call is what finds the server gone.
    await page.getByRole("link", { name: "Intents" }).click();
    const banner = page.getByText("The server does not answer", { exact: false });
    await banner.waitFor(INBOX_WAIT);
    await shot(page, "server-down-phone");
    await page.unroute("**/api/v1/**");
    await banner.waitFor({ state: "detached", ...INBOX_WAIT });
    await context.close();
  });
});

describe("the intents list", () => {
  it("searches by title and filters by status, shows spend against the budget; the dark-mode toggle is kept", async () => {
    const tag = uniqueTag("findme");
    const budgeted = await createIntent(cluster, { title: `Report ${tag}`, constraints: { budget: { max_total_cents: 4000 } } });
    await client("agent", uniqueTag("spender")).ops.costsRecord({ intent_id: budgeted.id, body: { cost_type: "api_call", amount: 1000, unit: "cents" } });
    await createIntent(cluster, { title: `Draft ${tag}`, status: "draft" });
    const { context, page } = await signedIn("operator");
    await page.getByRole("link", { name: "Intents" }).click();
    await page.getByLabel("Search").fill(tag);
    await expect.poll(() => page.locator("tbody tr").count()).toBe(2);
    // Budget use: spend against the limit, for intents that have a budget.
    await expect.poll(() => page.getByRole("row", { name: new RegExp(`Report ${tag}`) }).textContent()).toContain("10.00 of 40.00");
    expect(await page.getByRole("row", { name: new RegExp(`Report ${tag}`) }).getByRole("meter").getAttribute("aria-label")).toBe("25% of the budget spent");
    await page.getByLabel("Status").selectOption("draft");
    await expect.poll(() => page.locator("tbody tr").count()).toBe(1);
    expect(await page.locator("tbody tr").textContent()).toContain(`Draft ${tag}`);
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Search").fill("");
    await shot(page, "intents");
    // Dark mode: the system's preference until toggled, then the choice, kept across a reload.
    await expect.poll(() => page.evaluate("document.documentElement.dataset.theme")).toBe("light");
    await page.getByRole("button", { name: "Switch to dark mode" }).click();
    await expect.poll(() => page.evaluate("document.documentElement.dataset.theme")).toBe("dark");
    await page.reload();
    await page.getByRole("button", { name: "Switch to light mode" }).waitFor();
    await expect.poll(() => page.evaluate("document.documentElement.dataset.theme")).toBe("dark");
    await context.close();
  });
});
