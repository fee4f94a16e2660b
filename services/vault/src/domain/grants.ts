import type { ErrorCode } from "@intentmesh/contracts";

/**
 * Pure rules of tool grants (RFC-0014 §2, §3.2 step 1-3, §10.2; spec 4.9 heartbeat rule 6).
 * docs/vaults.md explains each decision the RFC leaves open.
 */

export interface GrantFacts {
  status: string;
  expiresAt: Date | null;
  /** The agent is deregistered (registry lifecycle projection): the grant is kept but sleeps. */
  dormant: boolean;
  scopes: readonly string[];
  service: string;
  context: Record<string, unknown>;
  constraints: Record<string, unknown>;
  invocationCount: number;
}

export interface CredentialFacts {
  status: string;
  expiresAt: Date | null;
}

/** What a client sees: revoked beats expired beats suspended (or dormant) beats active. */
export function grantStatus(grant: Pick<GrantFacts, "status" | "expiresAt" | "dormant">, now: Date): "active" | "expired" | "revoked" | "suspended" {
  if (grant.status === "revoked") return "revoked";
  if (grant.expiresAt && grant.expiresAt.getTime() <= now.getTime()) return "expired";
  if (grant.status === "suspended" || grant.dormant) return "suspended";
  return "active";
}

export function credentialStatus(credential: CredentialFacts, now: Date): "active" | "expired" | "revoked" {
  if (credential.status === "revoked") return "revoked";
  if (credential.expiresAt && credential.expiresAt.getTime() <= now.getTime()) return "expired";
  return "active";
}

/**
 * The scope a tool name asks for: `stripe.charges.read` on a stripe credential asks for
 * `charges.read`; a name without the service prefix is the scope itself.
 */
export const scopeOfTool = (tool: string, service: string): string => (tool.startsWith(`${service}.`) ? tool.slice(service.length + 1) : tool);

/**
 * Whether a grant covers a tool. The Python client names tools freely (`web_search`); the RFC
 * names them `<service>.<scope>`; the other implementation also matches the grant's
 * `context.tools` and the credential's service name. All four are honoured:
 * - the scope (tool without the service prefix) is one of the grant's scopes, or `*` is;
 * - the tool is listed in context.tools;
 * - the tool is the service itself (a grant of the whole service: its scopes then name what the
 *   service's endpoints may do, and the service's default endpoint is called).
 */
export function grantCovers(grant: Pick<GrantFacts, "scopes" | "service" | "context">, tool: string): boolean {
  const scope = scopeOfTool(tool, grant.service);
  if (grant.scopes.includes(scope) || grant.scopes.includes(tool) || grant.scopes.includes("*")) return true;
  const tools = grant.context.tools;
  if (Array.isArray(tools) && tools.includes(tool)) return true;
  return tool === grant.service;
}

export interface Refusal {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

/** Step 1 of the proxy: the grant and its credential may be used now, or why not. */
export function usability(grant: GrantFacts, credential: CredentialFacts, now: Date, grantId: string): Refusal | null {
  const status = grant.status === "revoked" ? "revoked" : grant.expiresAt && grant.expiresAt.getTime() <= now.getTime() ? "expired" : grant.status;
  if (status === "revoked") return { code: "GRANT_REVOKED", message: `grant ${grantId} was revoked` };
  if (status === "expired") return { code: "GRANT_EXPIRED", message: `grant ${grantId} expired at ${grant.expiresAt!.toISOString()}` };
  if (grant.dormant) return { code: "GRANT_DORMANT", message: `grant ${grantId} is dormant: its agent is deregistered; it wakes when the agent registers again` };
  if (status === "suspended") return { code: "GRANT_SUSPENDED", message: `grant ${grantId} is suspended` };
  const credStatus = credentialStatus(credential, now);
  if (credStatus === "revoked") return { code: "CREDENTIAL_REVOKED", message: `the credential of grant ${grantId} was revoked` };
  if (credStatus === "expired") return { code: "CREDENTIAL_EXPIRED", message: `the credential of grant ${grantId} has expired` };
  return null;
}

/** Step 3, context binding: a grant bound to an intent serves only that intent. Returns the intent the invocation is for. */
export function bindContext(grant: Pick<GrantFacts, "context">, requestedIntent: string | null, grantId: string): { intentId: string | null } | Refusal {
  const bound = typeof grant.context.intent_id === "string" ? grant.context.intent_id : null;
  if (bound && requestedIntent && bound !== requestedIntent) {
    return { code: "GRANT_CONTEXT_MISMATCH", message: `grant ${grantId} is bound to intent ${bound}, not ${requestedIntent}`, details: { bound_intent_id: bound } };
  }
  return { intentId: requestedIntent ?? bound };
}

/** The limits of §2.1 constraints that need counts: the total usage limit and the hourly rate. */
export function usageRefusal(grant: Pick<GrantFacts, "constraints" | "invocationCount">, lastHour: number, grantId: string, oldestInHour: Date | null, now: Date): Refusal | null {
  const total = numberOrNull(grant.constraints.max_invocations);
  if (total !== null && grant.invocationCount >= total) {
    return { code: "GRANT_EXHAUSTED", message: `grant ${grantId} has used all ${total} of its invocations`, details: { max_invocations: total } };
  }
  const perHour = numberOrNull(grant.constraints.max_invocations_per_hour);
  if (perHour !== null && lastHour >= perHour) {
    const retry = oldestInHour ? Math.max(1, Math.ceil((oldestInHour.getTime() + 3_600_000 - now.getTime()) / 1000)) : 3600;
    return { code: "GRANT_RATE_LIMITED", message: `grant ${grantId} allows ${perHour} invocations per hour`, details: { max_invocations_per_hour: perHour, retry_after_seconds: retry } };
  }
  return null;
}

function numberOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A parameter by dot path (`metadata.test_mode`). */
function parameterAt(parameters: Record<string, unknown>, path: string): unknown {
  let value: unknown = parameters;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Parameter restrictions (§2.1): `allowed_parameters` maps a parameter to its allowed values (a
 * list) or, for a key `<name>_max` / `<name>_min`, to a bound on the number `<name>`;
 * `denied_parameters` maps a parameter path to values it may not take. An absent parameter
 * passes an allow rule (the tool decides whether it needs it); a value outside fails it.
 */
export function parameterRefusal(constraints: Record<string, unknown>, parameters: Record<string, unknown>, grantId: string): Refusal | null {
  const denied = (name: string, why: string): Refusal => ({ code: "GRANT_PARAMETER_DENIED", message: `parameter ${name} ${why} (grant ${grantId})`, details: { parameter: name } });
  const allowed = constraints.allowed_parameters;
  if (allowed && typeof allowed === "object" && !Array.isArray(allowed)) {
    for (const [key, rule] of Object.entries(allowed as Record<string, unknown>)) {
      const bound = /^(.+)_(max|min)$/.exec(key);
      if (bound && typeof rule === "number") {
        const value = parameterAt(parameters, bound[1]!);
        if (value === undefined) continue;
        if (typeof value !== "number") return denied(bound[1]!, "must be a number");
        if (bound[2] === "max" ? value > rule : value < rule) return denied(bound[1]!, `is ${bound[2] === "max" ? "above" : "below"} ${rule}`);
        continue;
      }
      if (!Array.isArray(rule)) continue;
      const value = parameterAt(parameters, key);
      if (value === undefined) continue;
      if (!rule.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value))) return denied(key, "has a value the grant does not allow");
    }
  }
  const deniedRules = constraints.denied_parameters;
  if (deniedRules && typeof deniedRules === "object" && !Array.isArray(deniedRules)) {
    for (const [key, values] of Object.entries(deniedRules as Record<string, unknown>)) {
      const value = parameterAt(parameters, key);
      if (value === undefined) continue;
      const list = Array.isArray(values) ? values : [values];
      if (list.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value))) return denied(key, "has a value the grant denies");
    }
  }
  return null;
}

/** §10.2: grant scopes within the credential's. A credential that declares none limits nothing (docs/vaults.md). */
export function scopesOutsideCredential(scopes: readonly string[], available: readonly string[]): string[] {
  if (!available.length) return [];
  return scopes.filter((scope) => scope !== "*" ? !available.includes(scope) : true);
}
