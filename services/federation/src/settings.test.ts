import { describe, expect, it } from "vitest";
import { defaultSettings, federationEnvSchema, peerKeyHeader, settingsFromEnv } from "./settings";

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

describe("keys between servers (SPEC 5.1)", () => {
  it("reads each peer's api_key from FEDERATION_PEERS and sends it only to that peer", () => {
    const settings = parse({
      FEDERATION_ENABLED: "true",
      FEDERATION_SERVER_URL: "https://a.example.org",
      FEDERATION_PEERS: '[{"server_url":"https://b.example.org","api_key":"key-of-b-for-a-0000"},{"server_url":"https://c.example.org/fed","api_key":"key-of-c-for-a-0000"},{"server_url":"https://d.example.org"}]',
    });
    const peers = settings.peers!;
    expect(peerKeyHeader(peers, "https://b.example.org/api/v1/federation/receive")).toEqual({ "x-api-key": "key-of-b-for-a-0000" });
    expect(peerKeyHeader(peers, "https://c.example.org/fed/api/v1/federation/callbacks/x")).toEqual({ "x-api-key": "key-of-c-for-a-0000" });
    // Another path, another port, another scheme, a peer without a key, a stranger: no key goes out.
    expect(peerKeyHeader(peers, "https://c.example.org/other/api/v1/federation/receive")).toEqual({});
    expect(peerKeyHeader(peers, "https://b.example.org:8443/api/v1/federation/receive")).toEqual({});
    expect(peerKeyHeader(peers, "http://b.example.org/api/v1/federation/receive")).toEqual({});
    expect(peerKeyHeader(peers, "https://d.example.org/api/v1/federation/receive")).toEqual({});
    expect(peerKeyHeader(peers, "https://b.example.org.evil.example/api/v1/federation/receive")).toEqual({});
    expect(() => parse({ FEDERATION_PEERS: '[{"server_url":"https://b.example.org","api_key":"short"}]' })).toThrow(/16/);
  });
});
