import { randomUUID } from "node:crypto";
import { and, asc, count, desc, eq, gt, min, sql } from "drizzle-orm";
import { appError, errors, findUnsafeJsonValue, vaultEvents, type Caller, type InvokeToolBody, type RecordInvocationBody, type ToolInvocation } from "@intentmesh/contracts";
import { guardedFetch, isOutboundError } from "@intentmesh/ssrf";
import type { Tx } from "@intentmesh/db";
import { isAdmin, mayReadAllGrants, type VaultContext } from "../context";
import { credentials, grants, invocations } from "../db/schema";
import { toInvocation, type CredentialRow, type GrantRow, type InvocationRow } from "../mapping";
import { bindContext, grantCovers, parameterRefusal, scopeOfTool, usability, usageRefusal, type Refusal } from "../domain/grants";
import { redactJson, redactText, secretSpellings } from "../domain/redact";
import { vaultEvent, writeVaultEvents } from "../events";
import { dormantAgents, readableGrant } from "./grants";
import { centsOfReportedCost, recordInvocationCost } from "../costs";

/**
 * The tool proxy (RFC-0014 §3): the agent names a tool, the server checks the grant, calls the
 * tool's endpoint with the credential injected (through the SSRF guard, with a deadline), cuts
 * the credential out of the answer, records the invocation and announces it. The agent never
 * sees the material. docs/vaults.md, "Tool proxy".
 *
 * A refusal (no grant, expired, dormant, rate limited, ...) is a 4xx that writes nothing. Once
 * the grant allowed the call, the invocation is recorded whatever the tool does: success, an
 * error status of the tool, a refused or failed connection; the answer is then 200 with the
 * invocation's status, so the agent always learns its invocation_id.
 */

const refuse = (refusal: Refusal) => appError(refusal.code, refusal.message, refusal.details);

/** Admins and coordinators may invoke on an agent's behalf; anyone else only as itself. */
function actingAgentOf(caller: Caller, named: string | undefined): string {
  const agentId = named ?? caller.actor;
  if (agentId !== caller.actor && agentId !== caller.agent_id && !mayReadAllGrants(caller)) {
    throw errors.forbidden(`a tool is invoked by the agent itself (acting as ${caller.actor}, not ${agentId})`, { agent_id: agentId });
  }
  return agentId;
}

export async function invokeTool(ctx: VaultContext, body: InvokeToolBody, caller: Caller) {
  const tool = (body.tool_name ?? body.tool)!;
  const agentId = actingAgentOf(caller, body.agent_id ?? (typeof body.context?.agent_id === "string" ? body.context.agent_id : undefined));
  const requestedIntent = body.context?.intent_id ?? null;

  if (body.idempotency_key) {
    const replay = await previousInvocation(ctx, agentId, body.idempotency_key, tool);
    if (replay) return { ...toInvocation(replay), tool_name: tool };
  }

  const reserved = await reserve(ctx, agentId, tool, body, requestedIntent);
  const { grant, credential, invocation } = reserved;
  const outcome = await execute(ctx, credential, tool, body.parameters);
  const now = ctx.clock.now();
  const costState = outcome.cost && invocation.intentId ? "pending" : "none";
  const finished = await ctx.db.transaction(async (tx) => {
    const [row] = await tx
      .update(invocations)
      .set({ status: outcome.status, result: outcome.result, error: outcome.error, cost: outcome.cost, durationMs: outcome.durationMs, httpStatus: outcome.httpStatus, completedAt: now, costState })
      .where(and(eq(invocations.id, invocation.id), eq(invocations.status, "running")))
      .returning();
    await writeVaultEvents(tx, [invokedEvent(row!, grant, outcome.parametersSummary(body.parameters), caller)], now);
    return row!;
  });
  ctx.published();
  const final = costState === "pending" ? await recordInvocationCost(ctx, finished) : finished;
  return { ...toInvocation(final), tool_name: tool };
}

async function previousInvocation(ctx: VaultContext | { db: Tx }, agentId: string, key: string, tool: string): Promise<InvocationRow | null> {
  const [row] = await ctx.db.select().from(invocations).where(and(eq(invocations.agentId, agentId), eq(invocations.idempotencyKey, key)));
  if (!row) return null;
  if (row.tool !== tool) throw appError("IDEMPOTENCY_KEY_REUSED", `idempotency key ${key} was used for another tool (${row.tool})`, { idempotency_key: key });
  return row;
}

/**
 * Steps 1-3 of §3.2 and the reservation, in one transaction: the grant rows are locked, every
 * rule is checked on current data, and only then is the invocation row written (status
 * `running`) and the grant's use counted, so two concurrent calls cannot both take the last
 * slot of a limit. The first grant that covers the tool and allows the call is used; when none
 * allows it, the refusal of the first is the answer and nothing is written.
 */
async function reserve(ctx: VaultContext, agentId: string, tool: string, body: InvokeToolBody, requestedIntent: string | null) {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (tx) => {
    const candidates = await tx
      .select()
      .from(grants)
      .where(and(eq(grants.agentId, agentId), body.grant_id ? eq(grants.id, body.grant_id) : undefined))
      // Usable grants first; a revoked one still answers why (GRANT_REVOKED rather than "no grant").
      .orderBy(sql`${grants.status} = 'revoked'`, asc(grants.createdAt))
      .limit(200)
      .for("update");
    if (body.grant_id && !candidates.length) throw errors.notFound("grant", body.grant_id);
    const covering = candidates.filter((grant) => grantCovers(grant, tool));
    if (!covering.length) {
      if (body.grant_id) {
        const grant = candidates[0]!;
        throw appError("GRANT_SCOPE_INSUFFICIENT", `grant ${grant.id} does not include ${tool}`, { grant_id: grant.id, requested_scope: scopeOfTool(tool, grant.service), available_scopes: grant.scopes });
      }
      throw appError("GRANT_NOT_FOUND", `agent ${agentId} has no grant for tool ${tool}`, { agent_id: agentId, tool });
    }
    const dormant = await dormantAgents(tx, [agentId]);
    let first: Refusal | null = null;
    for (const grant of covering) {
      const [credential] = await tx.select().from(credentials).where(eq(credentials.id, grant.credentialId));
      const refusal = await judge(ctx, tx, grant, credential!, dormant.has(agentId), tool, body, requestedIntent, now);
      if ("code" in refusal) {
        first ??= refusal;
        continue;
      }
      const invocation: InvocationRow = {
        id: randomUUID(),
        grantId: grant.id,
        credentialId: grant.credentialId,
        ownerPrincipal: grant.ownerPrincipal,
        agentId,
        service: grant.service,
        tool,
        parameters: {},
        status: "running",
        result: null,
        error: null,
        cost: null,
        durationMs: null,
        httpStatus: null,
        idempotencyKey: body.idempotency_key ?? null,
        context: { ...(body.context ?? {}), intent_id: refusal.intentId },
        intentId: refusal.intentId,
        reported: false,
        costState: "none",
        createdAt: now,
        completedAt: null,
      };
      const [inserted] = await tx.insert(invocations).values(invocation).onConflictDoNothing().returning();
      if (!inserted) {
        // Another request with this idempotency key committed first: answer as a replay would.
        throw appError("IDEMPOTENCY_KEY_REUSED", `idempotency key ${body.idempotency_key} is in use by a concurrent invocation`, { idempotency_key: body.idempotency_key });
      }
      await tx.update(grants).set({ invocationCount: sql`${grants.invocationCount} + 1` }).where(eq(grants.id, grant.id));
      return { grant, credential: credential!, invocation: inserted };
    }
    throw refuse(first!);
  });
}

async function judge(ctx: VaultContext, tx: Tx, grant: GrantRow, credential: CredentialRow, dormant: boolean, tool: string, body: InvokeToolBody, requestedIntent: string | null, now: Date): Promise<Refusal | { intentId: string | null }> {
  const unusable = usability({ ...grant, dormant }, credential, now, grant.id);
  if (unusable) return unusable;
  const bound = bindContext(grant, requestedIntent, grant.id);
  if ("code" in bound) return bound;
  const hourAgo = new Date(now.getTime() - 3_600_000);
  const [usage] = await tx
    .select({ n: count(), oldest: min(invocations.createdAt) })
    .from(invocations)
    .where(and(eq(invocations.grantId, grant.id), gt(invocations.createdAt, hourAgo)));
  const overUsed = usageRefusal(grant, Number(usage?.n ?? 0), grant.id, usage?.oldest ?? null, now);
  if (overUsed) return overUsed;
  const badParameter = parameterRefusal(grant.constraints, body.parameters, grant.id);
  if (badParameter) return badParameter;
  if (!ctx.keys.has(credential.kekId)) {
    // Configuration, not the caller: the key this credential is sealed under was removed before its re-wrap.
    return { code: "SERVICE_UNAVAILABLE", message: `the credential of grant ${grant.id} is sealed under key-encryption key ${credential.kekId}, which this server does not hold`, details: { kek_id: credential.kekId } };
  }
  const endpoint = endpointOf(credential, tool);
  if (!endpoint) return { code: "TOOL_NOT_CALLABLE", message: `the credential of grant ${grant.id} has no base_url in its metadata: the proxy has nowhere to call`, details: { grant_id: grant.id } };
  const cap = grant.constraints.max_cost_per_invocation;
  if (typeof cap === "number" && endpoint.costCents !== null && endpoint.costCents > cap) {
    return { code: "GRANT_PARAMETER_DENIED", message: `${tool} costs ${endpoint.costCents} cents, above the grant's max_cost_per_invocation ${cap}`, details: { max_cost_per_invocation: cap } };
  }
  return bound;
}

interface Endpoint {
  url: URL;
  method: string;
  paramMapping: "body" | "query";
  headers: Record<string, string>;
  costCents: number | null;
  timeoutMs: number | null;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** Where a tool is called: the credential's base_url plus the endpoint configured for the tool (or /<scope>). */
export function endpointOf(credential: CredentialRow, tool: string): Endpoint | null {
  const metadata = credential.metadata;
  if (typeof metadata.base_url !== "string") return null;
  const scope = scopeOfTool(tool, credential.service);
  const endpoints = isObject(metadata.endpoints) ? metadata.endpoints : {};
  const config = (isObject(endpoints[tool]) ? endpoints[tool] : isObject(endpoints[scope]) ? endpoints[scope] : {}) as Record<string, unknown>;
  const path = typeof config.path === "string" ? config.path : tool === credential.service ? "/" : `/${scope}`;
  const method = typeof config.method === "string" ? config.method.toUpperCase() : "POST";
  const paramMapping = config.param_mapping === "query" || method === "GET" || method === "DELETE" ? "query" : "body";
  const headers: Record<string, string> = {};
  if (isObject(config.headers)) for (const [name, value] of Object.entries(config.headers)) if (typeof value === "string") headers[name] = value;
  const costCents = typeof config.cost_cents === "number" ? config.cost_cents : typeof metadata.cost_cents === "number" ? metadata.cost_cents : null;
  const timeoutMs = typeof metadata.timeout_ms === "number" ? metadata.timeout_ms : null;
  let url: URL;
  try {
    url = new URL(`${metadata.base_url.replace(/\/+$/, "")}${path}`);
  } catch {
    return null;
  }
  return { url, method, paramMapping, headers, costCents, timeoutMs };
}

/** How the credential goes onto the request (RFC-0014 adapters: api_key, bearer, basic, OAuth2 access token). */
function inject(credential: CredentialRow, material: Record<string, string>, headers: Record<string, string>, url: URL): void {
  const auth = isObject(credential.metadata.auth) ? credential.metadata.auth : {};
  const type = credential.authType;
  if (type === "basic_auth") {
    if (material.username !== undefined) headers.Authorization = `Basic ${Buffer.from(`${material.username}:${material.password ?? ""}`).toString("base64")}`;
    return;
  }
  const value = material.api_key ?? material.token ?? material.access_token ?? material.secret;
  if (value === undefined) return;
  if (auth.location === "query") {
    url.searchParams.set(typeof auth.query_param === "string" ? auth.query_param : "api_key", value);
    return;
  }
  const bearer = type === "bearer_token" || type === "oauth2_token" || type === "oauth2_client_credentials";
  const name = typeof auth.header_name === "string" ? auth.header_name : "Authorization";
  const prefix = typeof auth.header_prefix === "string" ? auth.header_prefix : bearer ? "Bearer" : "";
  headers[name] = prefix ? `${prefix} ${value}` : value;
}

interface Outcome {
  status: "success" | "error";
  result: unknown;
  error: Record<string, unknown> | null;
  cost: Record<string, unknown> | null;
  durationMs: number;
  httpStatus: number | null;
  parametersSummary(parameters: Record<string, unknown>): Record<string, unknown>;
}

/** Steps 4-6 and 9: open the material, call, cut the material out of whatever comes back. */
async function execute(ctx: VaultContext, credential: CredentialRow, tool: string, parameters: Record<string, unknown>): Promise<Outcome> {
  const endpoint = endpointOf(credential, tool)!;
  const material = ctx.keys.openMaterial(credential.id, credential);
  const spellings = secretSpellings(material);
  const summary = (params: Record<string, unknown>) => summarize(redactJson(params, spellings) as Record<string, unknown>);
  const headers: Record<string, string> = { "user-agent": "intentmesh-tool-proxy/1", accept: "application/json", ...endpoint.headers };
  const url = new URL(endpoint.url.href);
  let requestBody: string | undefined;
  if (endpoint.paramMapping === "query") {
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, typeof value === "string" ? value : JSON.stringify(value));
  } else {
    requestBody = JSON.stringify(parameters);
    headers["content-type"] = "application/json";
  }
  inject(credential, material, headers, url);
  const timeoutMs = Math.min(Math.max(endpoint.timeoutMs ?? ctx.proxy.timeoutMs, 1), ctx.proxy.maxTimeoutMs);
  const started = performance.now();
  const cost = endpoint.costCents !== null ? { amount_cents: endpoint.costCents, estimated_cost_usd: endpoint.costCents / 100, api_units: 1 } : null;
  try {
    const response = await guardedFetch(url, { method: endpoint.method, headers, body: requestBody }, { ...ctx.proxy.outbound, timeoutMs, maxResponseBytes: ctx.proxy.maxResponseBytes, maxRedirects: 0 });
    const durationMs = Math.round(performance.now() - started);
    const text = redactText(response.text(), spellings);
    const result = readable(text);
    const ok = response.status >= 200 && response.status < 300;
    return {
      status: ok ? "success" : "error",
      result,
      error: ok ? null : { code: "SERVICE_ERROR", message: `the tool answered HTTP ${response.status}` },
      cost,
      durationMs,
      httpStatus: response.status,
      parametersSummary: summary,
    };
  } catch (error) {
    const durationMs = Math.round(performance.now() - started);
    const reason = isOutboundError(error) ? error.code : "DISPATCH_FAILED";
    const message = isOutboundError(error) ? redactText(error.message, spellings) : "the call to the tool failed";
    if (!isOutboundError(error)) ctx.logger.warn({ err: error instanceof Error ? { name: error.name } : undefined, credential_id: credential.id, tool }, "tool call failed unexpectedly");
    return { status: "error", result: null, error: { code: "PROXY_ERROR", reason, message }, cost: null, durationMs, httpStatus: null, parametersSummary: summary };
  } finally {
    for (const key of Object.keys(material)) material[key] = "";
  }
}

/** The tool's answer as JSON when it is JSON and storable, else its text (shortened). */
function readable(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = { raw: text.slice(0, 4096) };
  }
  if (findUnsafeJsonValue(value)) return { raw: text.replace(/[\u0000\ud800-\udfff]/g, "\ufffd").slice(0, 4096) };
  return value;
}

/** §6.1 parameters_summary: top-level names with scalar values (shortened), nested values elided. */
function summarize(parameters: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(parameters).slice(0, 50)) {
    if (typeof value === "string") out[name] = value.length > 200 ? `${value.slice(0, 200)}…` : value;
    else if (value === null || typeof value === "number" || typeof value === "boolean") out[name] = value;
    else out[name] = Array.isArray(value) ? "[…]" : "{…}";
  }
  return out;
}

function invokedEvent(row: InvocationRow, grant: GrantRow, parametersSummary: Record<string, unknown>, caller: Caller) {
  return vaultEvent(vaultEvents.toolInvoked, {
    key: row.id,
    actor: caller.actor,
    agentId: row.agentId,
    intentId: row.intentId,
    payload: {
      invocation_id: row.id,
      grant_id: grant.id,
      agent_id: row.agentId,
      service: row.service,
      tool: row.tool,
      status: row.status,
      duration_ms: row.durationMs,
      cost: row.cost ?? null,
      parameters_summary: parametersSummary,
      ...(row.error ? { error_code: String(row.error.code) } : {}),
      ...(row.reported ? { reported: true } : {}),
    },
  });
}

/**
 * POST /invocations (Python record_invocation): an invocation the agent made itself, recorded
 * against its grant. The grant must be the agent's, cover the tool and not be revoked; the
 * record counts toward the grant's limits and is announced like a proxied one.
 */
export async function recordInvocation(ctx: VaultContext, body: RecordInvocationBody, caller: Caller): Promise<ToolInvocation> {
  const grant = await readableGrant(ctx, body.grant_id, caller);
  if (grant.agentId !== body.agent_id) throw appError("AGENT_MISMATCH", `grant ${grant.id} belongs to ${grant.agentId}, not ${body.agent_id}`, { grant_id: grant.id, agent_id: body.agent_id });
  if (!isAdmin(caller) && grant.ownerPrincipal !== caller.principal) actingAgentOf(caller, body.agent_id);
  if (!grantCovers(grant, body.tool)) throw appError("GRANT_SCOPE_INSUFFICIENT", `grant ${grant.id} does not include ${body.tool}`, { grant_id: grant.id, requested_scope: scopeOfTool(body.tool, grant.service), available_scopes: grant.scopes });
  if (grant.status === "revoked") throw appError("GRANT_REVOKED", `grant ${grant.id} was revoked`, { grant_id: grant.id });
  if (body.idempotency_key) {
    const replay = await previousInvocation(ctx, body.agent_id, body.idempotency_key, body.tool);
    if (replay) return toInvocation(replay);
  }
  const context = body.context ?? {};
  const intentCandidate = typeof context.intent_id === "string" && /^[0-9a-f-]{36}$/i.test(context.intent_id) ? context.intent_id.toLowerCase() : null;
  const bound = bindContext(grant, intentCandidate, grant.id);
  if ("code" in bound) throw refuse(bound);
  const now = ctx.clock.now();
  const cents = centsOfReportedCost(body.cost ?? null);
  const row: InvocationRow = {
    id: randomUUID(),
    grantId: grant.id,
    credentialId: grant.credentialId,
    ownerPrincipal: grant.ownerPrincipal,
    agentId: body.agent_id,
    service: body.service,
    tool: body.tool,
    parameters: body.parameters ?? {},
    status: body.status ?? "success",
    result: body.result ?? null,
    error: body.error ?? null,
    cost: body.cost ?? null,
    durationMs: body.duration_ms ?? null,
    httpStatus: null,
    idempotencyKey: body.idempotency_key ?? null,
    context: { ...context, intent_id: bound.intentId },
    intentId: bound.intentId,
    reported: true,
    costState: cents !== null && bound.intentId ? "pending" : "none",
    createdAt: now,
    completedAt: now,
  };
  const inserted = await ctx.db.transaction(async (tx) => {
    const [written] = await tx.insert(invocations).values(row).onConflictDoNothing().returning();
    if (!written) throw appError("IDEMPOTENCY_KEY_REUSED", `idempotency key ${body.idempotency_key} is in use by a concurrent invocation`, { idempotency_key: body.idempotency_key });
    await tx.update(grants).set({ invocationCount: sql`${grants.invocationCount} + 1` }).where(eq(grants.id, grant.id));
    await writeVaultEvents(tx, [invokedEvent(written, grant, summarize(row.parameters), caller)], now);
    return written;
  });
  ctx.published();
  return toInvocation(inserted.costState === "pending" ? await recordInvocationCost(ctx, inserted) : inserted);
}

/** GET /grants/{id}/invocations (Python list_invocations): newest first, a bare array. */
export async function listInvocations(ctx: VaultContext, grantId: string, limit: number, caller: Caller): Promise<ToolInvocation[]> {
  await readableGrant(ctx, grantId, caller);
  const rows = await ctx.db.select().from(invocations).where(eq(invocations.grantId, grantId)).orderBy(desc(invocations.createdAt), desc(invocations.id)).limit(limit);
  return rows.map(toInvocation);
}
