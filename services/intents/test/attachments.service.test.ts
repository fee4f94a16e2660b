import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentHeaders } from "../../../test/support/agents";
import type { BodyOf, Intentmesh } from "@intentmesh/sdk";
import { allEvents, createIntent, expectError, expectRejected, TIMESTAMP, UNKNOWN_ID } from "../../../test/support/e2e-helpers";
import { QUIET, manifestServices, startServiceHarness, type ServiceHarness } from "../../../test/support/service-harness";
import type { IntentsService } from "../src/service";

/**
 * The intents service's attachments (spec 2.7, 4.3): references stored, never fetched, metadata
 * checked against the mime type, listing and who may delete, through the typed client of the route
 * catalogue. The registry runs beside it only because the gateway asks it whom an X-Agent-ID is
 * bound to; sweeps run only when a test calls them.
 */
let harness: ServiceHarness<{ intents: IntentsService; stop(): Promise<void> }>;
beforeAll(async () => {
  harness = await startServiceHarness(
    manifestServices({
      registry: QUIET.registry,
      intents: QUIET.intents,
    }),
  );
});
afterAll(async () => {
  await harness?.stop();
});

type AttachmentBody = BodyOf<"attachmentsCreate">;

const pdf = (overrides: Partial<AttachmentBody> = {}): AttachmentBody => ({
  filename: "report.pdf",
  mime_type: "application/pdf",
  size: 48_213,
  storage_url: "s3://team-files/reports/q3.pdf",
  metadata: { pages: 12 },
  ...overrides,
});

/** A pdf body with fields the typed body forbids (sent raw). */
const pdfWith = (overrides: Record<string, unknown>): Record<string, unknown> => ({ ...pdf(), ...overrides });

const attach = (intentId: string, body: AttachmentBody, client: Intentmesh = harness.sdk(), ifMatch?: number) =>
  client.send("attachmentsCreate", { intent_id: intentId, ifMatch, body });
/** Raw on purpose: bodies the typed request forbids. */
const attachRaw = (intentId: string, body: unknown) => harness.rawApi(`/intents/${intentId}/attachments`, { body });
const list = (intentId: string) => harness.sdk().ops.attachmentsList({ intent_id: intentId });
const remove = (intentId: string, attachmentId: string, client: Intentmesh = harness.sdk()) =>
  client.send("attachmentsDelete", { intent_id: intentId, attachment_id: attachmentId });
/** Registers an agent (once) and answers the typed client acting as it with the key it is bound to. */
async function actingAgent(agentId: string, key: "agent" | "other"): Promise<Intentmesh> {
  await agentHeaders(harness, agentId, key);
  return harness.sdk(key, agentId);
}
/** The path of a refusal's first validation issue. */
const firstIssuePath = (details: Record<string, unknown>) => (Array.isArray(details.issues) ? details.issues[0]?.path : undefined);
// Tables of refusals: what the typed request accepts is sent typed, what it forbids is sent raw.
const typed = (overrides: Partial<AttachmentBody>) => ({ typed: pdf(overrides) });
const raw = (body: Record<string, unknown>) => ({ raw: body });
/** The refusal (400 VALIDATION_FAILED) of a body sent typed or raw: its message and details. */
async function refusalOf(intentId: string, sent: { typed: AttachmentBody } | { raw: unknown }): Promise<{ message: string; details: Record<string, unknown> }> {
  if ("typed" in sent) return expectRejected(attach(intentId, sent.typed), 400, "VALIDATION_FAILED");
  const res = await attachRaw(intentId, sent.raw);
  expectError(res, 400, "VALIDATION_FAILED");
  return res.body;
}

describe("POST /intents/{id}/attachments", () => {
  it("stores the reference (201) with the fields of 2.7, uploaded by the acting agent, and logs intent.attachment_added", async () => {
    const intent = await createIntent(harness);
    const uploader = await actingAgent("att-uploader", "agent");
    const res = await attach(intent.id, pdf(), uploader);
    expect(res.status).toBe(201);
    expect(res.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      intent_id: intent.id,
      filename: "report.pdf",
      mime_type: "application/pdf",
      size: 48_213,
      storage_url: "s3://team-files/reports/q3.pdf",
      metadata: { pages: 12 },
      uploaded_by: "att-uploader",
      created_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(res.data.created_at)).toBe(harness.clock.now().getTime());

    const listed = await harness.sdk().send("attachmentsList", { intent_id: intent.id });
    expect(listed.status).toBe(200);
    expect(listed.data).toMatchObject({ attachments: [res.data], has_more: false });

    const events = await allEvents(harness, intent.id);
    const added = events.find((e) => e.event_type === "attachment_added")!;
    expect(added).toMatchObject({
      actor: "att-uploader",
      payload: { attachment_id: res.data.id, filename: "report.pdf", mime_type: "application/pdf", size: 48_213, uploaded_by: "att-uploader" },
    });
    // A storage URL may be a pre-signed capability: it is readable through GET, not broadcast.
    expect(added.payload).not.toHaveProperty("storage_url");
  });

  it("uses the key's principal as uploaded_by when no agent acts, and defaults metadata to {}", async () => {
    const intent = await createIntent(harness);
    const res = await attach(intent.id, pdf({ metadata: undefined }), harness.sdk("coordinator"));
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ uploaded_by: "coordinator", metadata: {} });
  });

  it("never fetches storage_url", async () => {
    let requests = 0;
    const server = http.createServer((_req, res) => {
      requests++;
      res.end("bytes");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const intent = await createIntent(harness);
      const res = await attach(intent.id, pdf({ storage_url: `http://127.0.0.1:${port}/files/report.pdf` }));
      expect(res.status).toBe(201);
      expect((await list(intent.id)).attachments).toHaveLength(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.each([
    "https://files.example.com/a/b.pdf?X-Amz-Signature=abc",
    "http://files.example.com:8080/report.pdf",
    "s3://team-files/reports/2026/q3.pdf",
    "S3://team-files/key",
  ])("accepts the storage URL %s", async (storageUrl) => {
    const intent = await createIntent(harness);
    const res = await attach(intent.id, pdf({ storage_url: storageUrl }));
    expect(res.status).toBe(201);
    expect(res.data.storage_url).toBe(storageUrl);
  });

  it.each([
    ["relative", "/files/report.pdf"],
    ["no scheme", "files.example.com/report.pdf"],
    ["ftp", "ftp://files.example.com/report.pdf"],
    ["file", "file:///etc/passwd"],
    ["javascript", "javascript:alert(1)"],
    ["data", "data:text/plain;base64,aGVsbG8="],
    ["gs", "gs://bucket/key"],
    ["credentials", "https://user:secret@files.example.com/report.pdf"],
    ["s3 without key", "s3://team-files"],
    ["s3 with an empty key", "s3://team-files/"],
    ["s3 with an invalid bucket", "s3://Team_Files/key"],
    ["not a URL", "report.pdf"],
    ["empty", ""],
    ["carrying a CRLF", "https://files.example.com/report.pdf\r\nSet-Cookie: a=b"],
    ["carrying a space", "https://files.example.com/q3 report.pdf"],
  ])("refuses a storage URL that is %s (400 naming storage_url)", async (_what, storageUrl) => {
    const intent = await createIntent(harness);
    const res = await expectRejected(attach(intent.id, pdf({ storage_url: storageUrl })), 400, "VALIDATION_FAILED");
    expect(res.message).toContain("storage_url");
    expect(firstIssuePath(res.details)).toBe("body.storage_url");
    // Secrets are never echoed back.
    expect(JSON.stringify(res.body)).not.toContain("secret");
  });

  it.each([
    ["an empty filename", typed({ filename: "" }), "filename"],
    ["a blank filename", typed({ filename: "   " }), "filename"],
    ["a filename with a control character", typed({ filename: "a\u0007b.pdf" }), "filename"],
    ["a negative size", typed({ size: -1 }), "size"],
    ["a fractional size", typed({ size: 1.5 }), "size"],
    ["a size as a string", raw(pdfWith({ size: "100" })), "size"],
    ["a mime type without a subtype", typed({ mime_type: "pdf" }), "mime_type"],
    ["a mime type with an empty subtype", typed({ mime_type: "application/" }), "mime_type"],
    ["metadata that is not an object", raw(pdfWith({ metadata: [1, 2] })), "metadata"],
    ["an unknown field", raw(pdfWith({ owner: "me" })), ""],
  ])("refuses %s (400)", async (_what, sent, field) => {
    const intent = await createIntent(harness);
    expect((await refusalOf(intent.id, sent)).message).toContain(field);
  });

  it.each([
    ["a missing filename", "filename"],
    ["a missing mime_type", "mime_type"],
    ["a missing size", "size"],
    ["a missing storage_url", "storage_url"],
  ])("refuses %s (400)", async (_what, field) => {
    const intent = await createIntent(harness);
    // Raw on purpose: a body without a required field, which the typed body forbids.
    const body: Record<string, unknown> = pdf();
    delete body[field];
    expect((await refusalOf(intent.id, raw(body))).message).toContain(field);
  });

  it("accepts a size of 0 and a mime type with parameters", async () => {
    const intent = await createIntent(harness);
    const res = await attach(intent.id, pdf({ filename: "empty.txt", mime_type: "text/plain; charset=utf-8", size: 0, metadata: { pages: 1 } }));
    expect(res.status).toBe(201);
    expect(res.data).toMatchObject({ size: 0, mime_type: "text/plain; charset=utf-8" });
  });

  it("answers 404 for an unknown intent and 409 for a stale If-Match, writing nothing", async () => {
    await expectRejected(attach(UNKNOWN_ID, pdf()), 404, "INTENT_NOT_FOUND");
    const intent = await createIntent(harness);
    const stale = await expectRejected(attach(intent.id, pdf(), undefined, 7), 409, "VERSION_MISMATCH");
    expect(stale.body?.current_version).toBe(1);
    expect(await list(intent.id)).toMatchObject({ attachments: [], has_more: false });
    const fresh = await attach(intent.id, pdf(), undefined, 1);
    expect(fresh.status).toBe(201);
  });
});

describe("attachment metadata is checked against the mime type", () => {
  it.each([
    ["image/png", { width: 640, height: 480, alt: "a chart" }],
    ["image/svg+xml", { width: 10 }],
    ["video/mp4", { width: 1920, height: 1080, duration: 61.5, frame_rate: 29.97 }],
    ["audio/ogg", { duration: 3.2, encoding: "opus" }],
    ["application/pdf", { pages: 3 }],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", { pages: 40 }],
    ["text/markdown", { pages: 2 }],
    ["application/zip", { checksum: "sha256:abc", entries: 12 }],
    // Free-form keys that share a name with Object.prototype members are not mistaken for rules.
    ["image/png", { toString: "x", constructor: 1, valueOf: null }],
  ])("accepts %s with %j", async (mimeType, metadata) => {
    const intent = await createIntent(harness);
    const res = await attach(intent.id, pdf({ mime_type: mimeType, metadata }));
    expect(res.status).toBe(201);
    expect(res.data.metadata).toEqual(metadata);
  });

  it.each([
    ["image/png", { width: "640" }, "width"],
    ["image/png", { width: 0 }, "width"],
    ["image/jpeg", { height: 480.5 }, "height"],
    ["video/mp4", { width: 1920, height: -1 }, "height"],
    ["video/mp4", { duration: "1m" }, "duration"],
    ["audio/mpeg", { duration: 0 }, "duration"],
    ["application/pdf", { pages: "12" }, "pages"],
    ["application/pdf", { pages: 2.5 }, "pages"],
    ["audio/mpeg", { encoding: 320 }, "encoding"],
    ["audio/mpeg", { encoding: "" }, "encoding"],
    ["video/webm", { frame_rate: "30fps" }, "frame_rate"],
    ["video/webm", { frame_rate: 0 }, "frame_rate"],
  ])("refuses %s with %j: 400 naming %s", async (mimeType, metadata, key) => {
    const intent = await createIntent(harness);
    const res = await expectRejected(attach(intent.id, pdf({ mime_type: mimeType, metadata })), 400, "VALIDATION_FAILED");
    expect(res.message).toContain(`metadata.${key}`);
    expect(res.details.key).toBe(key);
    expect(firstIssuePath(res.details)).toBe(`body.metadata.${key}`);
    expect((await list(intent.id)).attachments).toEqual([]);
    expect((await allEvents(harness, intent.id)).map((e) => e.event_type)).toEqual(["intent_created"]);
  });

  it.each([
    ["image/png", { pages: 3 }, "pages"],
    ["application/pdf", { width: 800 }, "width"],
    ["audio/mpeg", { frame_rate: 30 }, "frame_rate"],
    ["video/mp4", { encoding: "h264" }, "encoding"],
    ["image/gif", { duration: 2 }, "duration"],
  ])("refuses %s with %j: %s does not apply to it (400 naming the key)", async (mimeType, metadata, key) => {
    const intent = await createIntent(harness);
    const res = await expectRejected(attach(intent.id, pdf({ mime_type: mimeType, metadata })), 400, "VALIDATION_FAILED");
    expect(res.message).toContain(`metadata.${key} applies to`);
    expect(res.details.key).toBe(key);
  });
});

describe("GET and DELETE /intents/{id}/attachments", () => {
  it("lists oldest first in a wrapper; an intent without attachments has an empty list; an unknown intent is 404", async () => {
    const intent = await createIntent(harness);
    expect(await list(intent.id)).toMatchObject({ attachments: [], has_more: false });
    const names = ["a.pdf", "b.pdf", "c.pdf"];
    for (const filename of names) expect((await attach(intent.id, pdf({ filename }))).status).toBe(201);
    const listed = await list(intent.id);
    expect(listed.attachments.map((a) => a.filename)).toEqual(names);
    await expectRejected(list(UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
  });

  it("deletes (200 with the removed attachment), logs intent.attachment_removed, and a second delete is 404", async () => {
    const intent = await createIntent(harness);
    const keep = (await attach(intent.id, pdf({ filename: "keep.pdf" }))).data;
    const gone = (await attach(intent.id, pdf({ filename: "gone.pdf" }))).data;
    const res = await remove(intent.id, gone.id);
    expect(res.status).toBe(200);
    expect(res.data).toEqual(gone);
    expect(await list(intent.id)).toMatchObject({ attachments: [keep], has_more: false });
    const events = await allEvents(harness, intent.id);
    expect(events.map((e) => e.event_type)).toEqual(["intent_created", "attachment_added", "attachment_added", "intent.attachment_removed"]);
    expect(events[3]).toMatchObject({ actor: "admin", payload: { attachment_id: gone.id, filename: "gone.pdf" } });
    await expectRejected(remove(intent.id, gone.id), 404, "ATTACHMENT_NOT_FOUND");
  });

  it("answers 404 for an attachment of another intent and leaves it in place", async () => {
    const mine = await createIntent(harness);
    const theirs = await createIntent(harness);
    const attachment = (await attach(theirs.id, pdf())).data;
    const res = await expectRejected(remove(mine.id, attachment.id), 404, "ATTACHMENT_NOT_FOUND");
    expect(res.details).toMatchObject({ resource: "attachment", id: attachment.id });
    expect((await list(theirs.id)).attachments).toEqual([attachment]);
  });

  it("answers 404 for a malformed attachment id and for an unknown intent", async () => {
    const intent = await createIntent(harness);
    await expectRejected(remove(intent.id, "not-a-uuid"), 404, "ATTACHMENT_NOT_FOUND");
    await expectRejected(remove(UNKNOWN_ID, UNKNOWN_ID), 404, "INTENT_NOT_FOUND");
  });

  it("lets only the uploader, a coordinator or an admin delete", async () => {
    const intent = await createIntent(harness);
    const uploader = await actingAgent("att-owner", "agent");
    const stranger = await actingAgent("att-stranger", "other");
    const first = (await attach(intent.id, pdf({ filename: "one.pdf" }), uploader)).data;
    const second = (await attach(intent.id, pdf({ filename: "two.pdf" }), uploader)).data;

    const refused = await expectRejected(remove(intent.id, first.id, stranger), 403, "FORBIDDEN");
    expect(refused.details.uploaded_by).toBe("att-owner");
    expect((await list(intent.id)).attachments).toHaveLength(2);

    expect((await remove(intent.id, first.id, uploader)).status).toBe(200);
    expect((await remove(intent.id, second.id, harness.sdk("coordinator"))).status).toBe(200);
    expect((await list(intent.id)).attachments).toEqual([]);
  });
});
