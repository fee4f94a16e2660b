import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCluster, type TestCluster } from "../support/cluster";
import { createIntent, expectError } from "../support/e2e-helpers";

/**
 * RFC 0024 workflow I/O contracts (docs/workflows.md): named types in state._io_types checked on
 * write, and the MCP server's /workflows calls (create, trigger, get, list) with outputs checked
 * on completion and inputs wired on claim.
 */

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startTestCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe("state._io_types holds named workflow types, checked on write (spec 2.1)", () => {
  it("accepts well-formed types at creation and by patch; refuses a malformed one with 400 naming the field, writing nothing", async () => {
    const types = { Finding: { source: "string", confidence: "number", note: { type: "string", required: false } } };
    const intent = await createIntent(cluster, { state: { _io_types: types } });
    expect(intent.state._io_types).toEqual(types);
    const bad = await cluster.api("/intents", { key: "admin", body: { title: "t", state: { _io_types: { Finding: { confidence: "numbr" } } } } });
    expectError(bad, 400, "VALIDATION_FAILED");
    expect(bad.body.message).toContain("state._io_types.Finding.confidence");
    const patch = (path: string, value: unknown, version: number) =>
      cluster.api(`/intents/${intent.id}/state`, { key: "admin", body: { patches: [{ op: "set", path, value }] }, headers: { "If-Match": String(version) } });
    const refused = await patch("/_io_types/Report", { top: "Nope" }, intent.version);
    expectError(refused, 400, "VALIDATION_FAILED");
    expect(refused.body.message).toContain("state._io_types.Report.top");
    expect((await cluster.api(`/intents/${intent.id}`)).body).toMatchObject({ version: intent.version, state: { _io_types: types } });
    const ok = await patch("/_io_types/Report", { top: "Finding", items: "array" }, intent.version);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.state._io_types.Report).toEqual({ top: "Finding", items: "array" });
    // Patches elsewhere in the state are not concerned.
    expect((await patch("/notes", "x", ok.body.version)).status).toBe(200);
  });
});
