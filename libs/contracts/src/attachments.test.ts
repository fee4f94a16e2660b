import { describe, expect, it } from "vitest";
import { CreateAttachmentBody, MimeType, StorageUrl } from "./attachments";

describe("StorageUrl", () => {
  it.each(["https://files.example.com/a.pdf", "http://10.0.0.1:9000/bucket/a.pdf", "s3://my.bucket-1/dir/a.pdf", "https://x.example/a?sig=1#frag"])("accepts %s", (url) => {
    expect(StorageUrl.safeParse(url).success).toBe(true);
  });

  it.each([
    "a.pdf",
    "/a.pdf",
    "//files.example.com/a.pdf",
    "https:/files.example.com/a.pdf",
    "ftp://files.example.com/a.pdf",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "data:,hello",
    "https://user:pw@files.example.com/a.pdf",
    "https://user@files.example.com/a.pdf",
    "s3://bucket",
    "s3://bucket/",
    "s3://b/key",
    "s3://Upper/key",
    `https://example.com/${"a".repeat(5000)}`,
    // Accepted by the URL parser (which drops or encodes them), but stored as given.
    "https://files.example.com/a.pdf\r\nSet-Cookie: x=1",
    "https://files.example.com/a\tb.pdf",
    "https://files.example.com/a b.pdf",
    "https://files.example.com/a.pdf ",
    "https://files.example.com/a\u0000.pdf",
  ])("refuses %j", (url) => {
    expect(StorageUrl.safeParse(url).success).toBe(false);
  });
});

describe("MimeType", () => {
  it.each(["image/png", "application/vnd.ms-excel", "image/svg+xml", "text/plain; charset=utf-8", 'multipart/mixed; boundary="a b"'])("accepts %s", (mime) => {
    expect(MimeType.safeParse(mime).success).toBe(true);
  });
  it.each(["png", "image/", "/png", "image/png/x", "image png", "", "text/plain; charset"])("refuses %j", (mime) => {
    expect(MimeType.safeParse(mime).success).toBe(false);
  });
});

describe("CreateAttachmentBody", () => {
  const body = { filename: " a.pdf ", mime_type: "application/pdf", size: 0, storage_url: "s3://bucket-a/a.pdf" };
  it("trims the filename and defaults metadata to {}", () => {
    expect(CreateAttachmentBody.parse(body)).toEqual({ ...body, filename: "a.pdf", metadata: {} });
  });
  it("refuses unknown fields, a negative or fractional size and uploaded_by", () => {
    expect(CreateAttachmentBody.safeParse({ ...body, size: -1 }).success).toBe(false);
    expect(CreateAttachmentBody.safeParse({ ...body, size: 2.5 }).success).toBe(false);
    expect(CreateAttachmentBody.safeParse({ ...body, uploaded_by: "someone" }).success).toBe(false);
  });
});
