import { describe, expect, it } from "vitest";
import { defaultSettings, federationEnvSchema, settingsFromEnv } from "./settings";

const parse = (env: Record<string, string>) => settingsFromEnv(federationEnvSchema.parse(env));

describe("federation settings from the environment", () => {
  it("is off by default, with the allowlist trust policy and the 10-second dispatch timeout of SPEC 8", () => {
    expect(defaultSettings()).toMatchObject({ enabled: false, trustPolicy: "allowlist", dispatchTimeoutMs: 10_000, allowLoopback: false });
    expect(parse({})).toMatchObject({ enabled: false, trustPolicy: "allowlist", peers: [], dispatchTimeoutMs: 10_000, allowLoopback: false });
  });

  it("reads server URL, trust policy, peers, policy and timeout", () => {
    const settings = parse({
      FEDERATION_ENABLED: "true",
      FEDERATION_SERVER_URL: "https://a.example.org",
      FEDERATION_TRUST_POLICY: "trustless",
      FEDERATION_PEERS: '[{"server_url":"https://b.example.org","relationship":"upstream"}]',
      FEDERATION_POLICY: '{"max_cost":10}',
      FEDERATION_DISPATCH_TIMEOUT_MS: "5000",
    });
    expect(settings).toMatchObject({ enabled: true, serverUrl: "https://a.example.org", trustPolicy: "trustless", peers: [{ server_url: "https://b.example.org", relationship: "upstream" }], localPolicy: { max_cost: 10 }, dispatchTimeoutMs: 5000 });
  });

  it("never takes the test-only loopback allowance from the environment", () => {
    expect(parse({ FEDERATION_ENABLED: "true", FEDERATION_SERVER_URL: "https://a.example.org", FEDERATION_ALLOW_LOOPBACK: "true", ALLOW_LOOPBACK: "true" }).allowLoopback).toBe(false);
  });

  it("refuses an enabled service without a server URL, an unknown trust policy, and peers that are not JSON", () => {
    expect(() => parse({ FEDERATION_ENABLED: "true" })).toThrow(/FEDERATION_SERVER_URL is required/);
    expect(() => parse({ FEDERATION_ENABLED: "true", FEDERATION_SERVER_URL: "" })).toThrow(/FEDERATION_SERVER_URL is required/);
    expect(() => federationEnvSchema.parse({ FEDERATION_TRUST_POLICY: "everyone" })).toThrow();
    expect(() => federationEnvSchema.parse({ FEDERATION_PEERS: "b.example.org" })).toThrow(/JSON/);
  });
});
