import { describe, expect, it } from "vitest";
import { bindContext, grantCovers, grantStatus, parameterRefusal, scopesOutsideCredential, usability, usageRefusal } from "./grants";
import { redactText, secretSpellings } from "./redact";

const now = new Date("2026-03-01T10:00:00Z");
const grant = (over: Partial<Parameters<typeof usability>[0]> = {}) => ({ status: "active", expiresAt: null, dormant: false, scopes: ["charges.read"], service: "stripe", context: {}, constraints: {}, invocationCount: 0, ...over });
const active = { status: "active", expiresAt: null };

describe("grant rules", () => {
  it("covers a tool by scope, by service.scope, by context.tools, by the service itself", () => {
    expect(grantCovers(grant(), "charges.read")).toBe(true);
    expect(grantCovers(grant(), "stripe.charges.read")).toBe(true);
    expect(grantCovers(grant(), "stripe.refunds.create")).toBe(false);
    expect(grantCovers(grant({ scopes: [], context: { tools: ["web_search"] } }), "web_search")).toBe(true);
    expect(grantCovers(grant({ scopes: [] }), "stripe")).toBe(true);
    expect(grantCovers(grant({ scopes: ["*"] }), "anything")).toBe(true);
  });

  it("refuses in the RFC's order: revoked, expired, dormant, suspended, then the credential", () => {
    const past = new Date(now.getTime() - 1);
    expect(usability(grant({ status: "revoked", expiresAt: past, dormant: true }), active, now, "g")?.code).toBe("GRANT_REVOKED");
    expect(usability(grant({ expiresAt: past, dormant: true }), active, now, "g")?.code).toBe("GRANT_EXPIRED");
    expect(usability(grant({ status: "suspended", dormant: true }), active, now, "g")?.code).toBe("GRANT_DORMANT");
    expect(usability(grant({ status: "suspended" }), active, now, "g")?.code).toBe("GRANT_SUSPENDED");
    expect(usability(grant(), { status: "revoked", expiresAt: null }, now, "g")?.code).toBe("CREDENTIAL_REVOKED");
    expect(usability(grant(), { status: "active", expiresAt: now }, now, "g")?.code).toBe("CREDENTIAL_EXPIRED");
    expect(usability(grant({ expiresAt: new Date(now.getTime() + 1) }), active, now, "g")).toBeNull();
    expect(grantStatus({ status: "active", expiresAt: null, dormant: true }, now)).toBe("suspended");
  });

  it("binds to the grant's intent", () => {
    expect(bindContext(grant({ context: { intent_id: "i1" } }), null, "g")).toEqual({ intentId: "i1" });
    expect(bindContext(grant({ context: { intent_id: "i1" } }), "i2", "g")).toMatchObject({ code: "GRANT_CONTEXT_MISMATCH" });
    expect(bindContext(grant(), "i2", "g")).toEqual({ intentId: "i2" });
  });

  it("usage limits: total, then per hour with a retry-after from the oldest call in the hour", () => {
    expect(usageRefusal(grant({ constraints: { max_invocations: 3 }, invocationCount: 3 }), 0, "g", null, now)?.code).toBe("GRANT_EXHAUSTED");
    const limited = usageRefusal(grant({ constraints: { max_invocations_per_hour: 2 } }), 2, "g", new Date(now.getTime() - 3_000_000), now);
    expect(limited).toMatchObject({ code: "GRANT_RATE_LIMITED", details: { retry_after_seconds: 600 } });
    expect(usageRefusal(grant({ constraints: { max_invocations_per_hour: 2 } }), 1, "g", null, now)).toBeNull();
  });

  it("parameter constraints: allowed lists, _max/_min bounds, denied values at a dot path", () => {
    const constraints = { allowed_parameters: { currency: ["usd", "eur"], amount_max: 50000, amount_min: 1 }, denied_parameters: { "metadata.test_mode": [true] } };
    expect(parameterRefusal(constraints, { currency: "usd", amount: 50000 }, "g")).toBeNull();
    expect(parameterRefusal(constraints, {}, "g")).toBeNull();
    expect(parameterRefusal(constraints, { currency: "gbp" }, "g")).toMatchObject({ code: "GRANT_PARAMETER_DENIED", details: { parameter: "currency" } });
    expect(parameterRefusal(constraints, { amount: 50001 }, "g")).toMatchObject({ details: { parameter: "amount" } });
    expect(parameterRefusal(constraints, { amount: 0 }, "g")).toMatchObject({ details: { parameter: "amount" } });
    expect(parameterRefusal(constraints, { amount: "5" }, "g")).toMatchObject({ details: { parameter: "amount" } });
    expect(parameterRefusal(constraints, { metadata: { test_mode: true } }, "g")).toMatchObject({ details: { parameter: "metadata.test_mode" } });
  });

  it("a grant stays within the credential's declared scopes", () => {
    expect(scopesOutsideCredential(["a", "c"], ["a", "b"])).toEqual(["c"]);
    expect(scopesOutsideCredential(["*"], ["a"])).toEqual(["*"]);
    expect(scopesOutsideCredential(["anything"], [])).toEqual([]);
  });
});

describe("redaction", () => {
  it("cuts every spelling of the material out of a tool's answer", () => {
    const spellings = secretSpellings({ username: "svc", password: "p@ss word/1", api_key: "k3y-value" });
    const basic = Buffer.from("svc:p@ss word/1").toString("base64");
    const text = `a k3y-value b ${encodeURIComponent("p@ss word/1")} c ${basic} d ${Buffer.from("k3y-value").toString("base64")} e svc`;
    const out = redactText(text, spellings);
    expect(out).toBe("a [REDACTED] b [REDACTED] c [REDACTED] d [REDACTED] e svc");
  });
});
