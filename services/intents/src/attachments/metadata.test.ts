import { describe, expect, it } from "vitest";
import { mediaFamily, metadataIssues } from "./metadata";

describe("mediaFamily", () => {
  it.each([
    ["image/png", "image"],
    ["IMAGE/JPEG", "image"],
    ["video/mp4", "video"],
    ["audio/ogg; codecs=opus", "audio"],
    ["application/pdf", "document"],
    ["application/msword", "document"],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document"],
    ["application/vnd.oasis.opendocument.text", "document"],
    ["text/plain; charset=utf-8", "document"],
    ["text/markdown", "document"],
    ["application/json", "other"],
    ["application/zip", "other"],
  ])("%s is %s", (mime, family) => {
    expect(mediaFamily(mime)).toBe(family);
  });
});

describe("metadataIssues", () => {
  it("accepts the keys of spec 2.7 with good values on the types they apply to", () => {
    expect(metadataIssues("image/png", { width: 640, height: 480 })).toEqual([]);
    expect(metadataIssues("video/mp4", { width: 1920, height: 1080, duration: 12.5, frame_rate: 29.97 })).toEqual([]);
    expect(metadataIssues("audio/mpeg", { duration: 180, encoding: "mp3" })).toEqual([]);
    expect(metadataIssues("application/pdf", { pages: 12 })).toEqual([]);
  });

  it("leaves unknown keys free-form", () => {
    expect(metadataIssues("application/zip", { checksum: "abc", nested: { any: [1, null] }, width_hint: "wide" })).toEqual([]);
  });

  it("treats keys named like Object.prototype members as free-form, not as rules (no TypeError, no 500)", () => {
    const metadata = JSON.parse('{"toString": 1, "constructor": "x", "hasOwnProperty": null, "valueOf": [], "__proto__": {"width": "no"}}');
    expect(metadataIssues("image/png", metadata)).toEqual([]);
  });

  it.each([
    ["image/png", { width: 0 }, "width"],
    ["image/png", { width: -3 }, "width"],
    ["image/png", { width: 10.5 }, "width"],
    ["image/png", { height: "480" }, "height"],
    ["video/mp4", { height: null }, "height"],
    ["audio/wav", { duration: 0 }, "duration"],
    ["video/mp4", { duration: "12s" }, "duration"],
    ["application/pdf", { pages: 1.5 }, "pages"],
    ["application/pdf", { pages: 0 }, "pages"],
    ["audio/wav", { encoding: "" }, "encoding"],
    ["audio/wav", { encoding: 16 }, "encoding"],
    ["video/mp4", { frame_rate: -24 }, "frame_rate"],
    ["video/mp4", { frame_rate: "24" }, "frame_rate"],
  ])("%s with %j names %s as the wrong type", (mime, metadata, key) => {
    const issues = metadataIssues(mime, metadata as Record<string, unknown>);
    expect(issues.map((i) => i.key)).toEqual([key]);
    expect(issues[0]!.message).toContain(`metadata.${key} must be`);
  });

  it.each([
    ["image/png", { pages: 3 }, "pages"],
    ["image/png", { duration: 3 }, "duration"],
    ["audio/mpeg", { width: 100 }, "width"],
    ["video/mp4", { encoding: "h264" }, "encoding"],
    ["application/pdf", { frame_rate: 30 }, "frame_rate"],
    ["application/zip", { width: 1 }, "width"],
  ])("%s refuses %j: %s does not apply to it", (mime, metadata, key) => {
    const issues = metadataIssues(mime, metadata as Record<string, unknown>);
    expect(issues.map((i) => i.key)).toEqual([key]);
    expect(issues[0]!.message).toContain("applies to");
  });

  it("reports every bad key", () => {
    expect(metadataIssues("image/png", { width: "x", height: -1, pages: 2 }).map((i) => i.key)).toEqual(["width", "height", "pages"]);
  });
});
