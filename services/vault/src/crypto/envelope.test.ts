import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeyRing, KeyUnavailableError, open, seal } from "./envelope";
import { parseKeyEntries } from "./keyring-config";

const key = () => randomBytes(32);

describe("envelope encryption", () => {
  it("seals with AES-256-GCM bound to its AAD: another AAD, another key or a flipped byte does not open", () => {
    const k = key();
    const sealed = seal(k, Buffer.from("material"), "a");
    expect(open(k, sealed, "a").toString()).toBe("material");
    expect(() => open(k, sealed, "b")).toThrow();
    expect(() => open(key(), sealed, "a")).toThrow();
    const bytes = Buffer.from(sealed, "base64");
    bytes[bytes.length - 1]! ^= 1;
    expect(() => open(k, bytes.toString("base64"), "a")).toThrow();
    expect(seal(k, Buffer.from("material"), "a")).not.toBe(sealed);
  });

  it("a data key per credential, wrapped under the primary; opened with the key id on the row; re-wrapped without touching the material", () => {
    const old = key();
    const ring1 = new KeyRing(new Map([["old", old]]), "old");
    const sealed = ring1.sealMaterial("cred-1", { api_key: "s3cret-value" });
    expect(sealed.kekId).toBe("old");
    expect(sealed.material + sealed.wrappedKey).not.toContain("s3cret");
    expect(ring1.openMaterial("cred-1", sealed)).toEqual({ api_key: "s3cret-value" });
    // Bound to the credential: the same sealed columns copied onto another row do not open.
    expect(() => ring1.openMaterial("cred-2", sealed)).toThrow();

    const ring2 = new KeyRing(new Map([["new", key()], ["old", old]]), "new");
    expect(ring2.openMaterial("cred-1", sealed)).toEqual({ api_key: "s3cret-value" });
    const moved = { ...sealed, ...ring2.rewrap("cred-1", sealed) };
    expect(moved.kekId).toBe("new");
    expect(moved.material).toBe(sealed.material);
    expect(ring2.openMaterial("cred-1", moved)).toEqual({ api_key: "s3cret-value" });
    expect(() => ring1.openMaterial("cred-1", moved)).toThrow(KeyUnavailableError);
  });

  it("reads VAULT_KEK entries and refuses bad ones without printing a key", () => {
    const k = key().toString("base64");
    expect([...parseKeyEntries(`a:${k}, b:${k}`, "VAULT_KEK").keys()]).toEqual(["a", "b"]);
    const short = Buffer.alloc(16).toString("base64");
    for (const bad of [`a:${short}`, k, `a:${k},a:${k}`, ""]) {
      let message = "";
      try {
        parseKeyEntries(bad, "VAULT_KEK");
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, bad).toMatch(/VAULT_KEK/);
      expect(message).not.toContain(k);
      expect(message).not.toContain(short);
    }
    expect(() => new KeyRing(new Map([["a", key()]]), "b")).toThrow(/primary/);
  });
});
