import { describe, expect, it } from "vitest";
import { judgeHostname } from "./hostname-policy";

describe("judgeHostname", () => {
  it.each([
    "localhost", "localhost.", "a.b.localhost", "printer.local", "metadata.google.internal", "compute.internal",
    "box.localdomain", "localhost.localdomain", "wiki.intranet", "router.lan", "nas.home.arpa", "x.corp", "x.home",
    "x.private", "4.3.2.1.in-addr.arpa", "1.0.ip6.arpa", "peer.test", "peer.example", "peer.invalid",
    "intranet", "metadata", "db", "instance-data.ec2.internal", "ip6-loopback", "",  "a..b", "peer.example.org..",
  ])("refuses %s", (hostname) => {
    expect(judgeHostname(hostname)).toMatchObject({ allowed: false, refusedClass: "internal_hostname" });
  });

  it.each(["peer.example.org", "xn--bcher-kva.de", "federation.intentmesh.io", "a.b.c.d.example.com", "localhost.example.com", "local.example.com"])(
    "allows %s",
    (hostname) => {
      expect(judgeHostname(hostname)).toMatchObject({ allowed: true });
    },
  );

  it("allows localhost names only with the test-only loopback allowance", () => {
    expect(judgeHostname("localhost", { allowLoopback: true })).toEqual({ allowed: true, hostname: "localhost" });
    expect(judgeHostname("peer-b.localhost.", { allowLoopback: true })).toEqual({ allowed: true, hostname: "peer-b.localhost" });
    expect(judgeHostname("printer.local", { allowLoopback: true })).toMatchObject({ allowed: false });
  });
});
