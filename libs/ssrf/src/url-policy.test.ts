import { describe, expect, it } from "vitest";
import { PUBLIC_LITERALS, URL_PROBES } from "../test/probes";
import { checkOutboundUrl } from "./url-policy";
import { OutboundError } from "./errors";

function refusalOf(url: string, allowLoopback = false): OutboundError | undefined {
  try {
    checkOutboundUrl(url, { allowLoopback });
    return undefined;
  } catch (error) {
    if (error instanceof OutboundError) return error;
    throw error;
  }
}

describe("checkOutboundUrl refuses every probe class before any lookup", () => {
  it.each(URL_PROBES)("%s is refused as %s", (url, refusedClass) => {
    const error = refusalOf(url);
    expect(error?.code).toBe("SSRF_BLOCKED");
    expect(error?.refusedClass).toBe(refusedClass);
  });

  it("never repeats userinfo in its message", () => {
    const error = refusalOf("http://admin:hunter2@peer.example.org/");
    expect(error?.message).not.toContain("hunter2");
    expect(error?.message).not.toContain("admin");
  });
});

describe("checkOutboundUrl lets public destinations through", () => {
  it.each(PUBLIC_LITERALS)("%s connects to %s", (url, address) => {
    const checked = checkOutboundUrl(url);
    expect(checked.host).toMatchObject({ kind: "address", address });
  });

  it("keeps a public name for resolution", () => {
    expect(checkOutboundUrl("https://peer.example.org:8443/api").host).toEqual({ kind: "name", hostname: "peer.example.org" });
  });

  it("treats a name with one trailing dot as the same name", () => {
    expect(checkOutboundUrl("https://peer.example.org./").host).toEqual({ kind: "name", hostname: "peer.example.org" });
  });
});

describe("the test-only loopback allowance", () => {
  it("is off by default", () => {
    expect(refusalOf("http://127.0.0.1:8080/")?.refusedClass).toBe("loopback");
    expect(refusalOf("http://[::1]:8080/")?.refusedClass).toBe("loopback");
    expect(refusalOf("http://localhost:8080/")?.refusedClass).toBe("internal_hostname");
  });

  it("admits loopback addresses and localhost names when set", () => {
    expect(checkOutboundUrl("http://127.0.0.1:8080/", { allowLoopback: true }).host).toMatchObject({ address: "127.0.0.1" });
    expect(checkOutboundUrl("http://0x7f.1:8080/", { allowLoopback: true }).host).toMatchObject({ address: "127.0.0.1" });
    expect(checkOutboundUrl("http://[::1]:8080/", { allowLoopback: true }).host).toMatchObject({ address: "::1", family: 6 });
    expect(checkOutboundUrl("http://[::ffff:127.0.0.1]/", { allowLoopback: true }).host).toMatchObject({ address: "127.0.0.1", family: 4 });
    expect(checkOutboundUrl("http://peer-a.localhost:8080/", { allowLoopback: true }).host).toEqual({ kind: "name", hostname: "peer-a.localhost" });
  });

  it("admits nothing else", () => {
    for (const [url, refusedClass] of URL_PROBES) {
      if (refusedClass === "loopback" || refusedClass === "internal_hostname") continue;
      expect(refusalOf(url, true)?.refusedClass, url).toBe(refusedClass);
    }
    expect(refusalOf("http://metadata.google.internal/", true)?.refusedClass).toBe("internal_hostname");
    // Loopback reached through a translator is never a test peer.
    expect(refusalOf("http://[64:ff9b::7f00:1]/", true)?.refusedClass).toBe("loopback");
    expect(refusalOf("http://[2002:7f00:1::]/", true)?.refusedClass).toBe("loopback");
  });
});
