import { describe, expect, it } from "vitest";
import { agentSubjectToken, HeartbeatConfig, RegisterAgentBody } from "./registry";

describe("HeartbeatConfig (2.15)", () => {
  it("defaults to 30/90/300", () => {
    expect(HeartbeatConfig.parse({})).toEqual({ interval_seconds: 30, unhealthy_after_seconds: 90, dead_after_seconds: 300 });
  });
  it("requires unhealthy >= 2 x interval and dead >= 2 x unhealthy, at the boundary included", () => {
    expect(HeartbeatConfig.safeParse({ interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 40 }).success).toBe(true);
    expect(HeartbeatConfig.safeParse({ interval_seconds: 10, unhealthy_after_seconds: 19, dead_after_seconds: 40 }).success).toBe(false);
    expect(HeartbeatConfig.safeParse({ interval_seconds: 10, unhealthy_after_seconds: 20, dead_after_seconds: 39 }).success).toBe(false);
  });
  it("checks the rules after defaults: an interval of 60 alone is refused", () => {
    const result = HeartbeatConfig.safeParse({ interval_seconds: 60 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain("unhealthy_after_seconds must be at least 2 x interval_seconds (120)");
  });
});

describe("agentSubjectToken", () => {
  it("keeps ordinary ids readable and escapes every byte a subject token may not hold", () => {
    expect(agentSubjectToken("agent-1_a:b@c")).toBe("agent-1_a:b@c");
    expect(agentSubjectToken("a.b*c>d~e")).toBe("a~2eb~2ac~3ed~7ee");
    expect(agentSubjectToken("é")).toBe("~c3~a9");
  });
  it("is one-to-one: distinct ids never share a token", () => {
    expect(agentSubjectToken("a.b")).not.toBe(agentSubjectToken("a~2eb"));
  });
});

describe("RegisterAgentBody", () => {
  it("takes only http and https addresses for endpoint and origin_server_url", () => {
    for (const field of ["endpoint", "origin_server_url"]) {
      expect(RegisterAgentBody.safeParse({ [field]: "https://agents.example.com/a" }).success).toBe(true);
      expect(RegisterAgentBody.safeParse({ [field]: "http://agents.example.com:8080/a" }).success).toBe(true);
      for (const bad of ["javascript:alert(1)", "file:///etc/passwd", "gopher://agents.example.com/"]) {
        const result = RegisterAgentBody.safeParse({ [field]: bad });
        expect(result.success, `${field} ${bad}`).toBe(false);
        expect(result.error?.issues[0]?.message).toContain("http:// or https://");
      }
    }
  });
});
