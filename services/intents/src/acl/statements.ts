import type { AccessPolicy, Caller, GovernancePolicy, IntentPermission, PrincipalType } from "@intentmesh/contracts";
import type { DatabaseHandle } from "@intentmesh/db";
import { sql, type SQL } from "drizzle-orm";
import { intents } from "../db/schema";
import type { AclHead, EntryFacts } from "./rules";

type Query = DatabaseHandle["query"];

/** What a decision reads: the ACL head from the intent's row and the entries that name the caller. */
export interface AccessFacts {
  intentId: string;
  head: AclHead;
  entries: EntryFacts[];
}

export interface RawFacts {
  intent_id: string;
  acl_policy: string | null;
  acl_default: string | null;
  acl_owner: string | null;
  entries: { principal_type: string; principal_id: string; permission: string; expires_at: string | null }[] | null;
}

/**
 * The entries of the intent `i` that may name the caller (principal $p, acting agent $a, roles
 * $r as a JSON array), only when the intent has an ACL: the rule (rules.ts) decides with them.
 */
const ENTRIES_OF_CALLER = (p: string, a: string, r: string) => `
  case when i.acl_policy is null then null else (
    select coalesce(json_agg(json_build_object('principal_type', e.principal_type, 'principal_id', e.principal_id, 'permission', e.permission, 'expires_at', e.expires_at)), '[]'::json)
    from intents.acl_entries e
    where e.intent_id = i.id
      and ((e.principal_type = 'user' and e.principal_id = ${p})
        or (e.principal_type = 'agent' and e.principal_id = ${a})
        or (e.principal_type = 'group' and e.principal_id in (select jsonb_array_elements_text(${r}::jsonb))))) end as entries`;

/**
 * ENTRIES_OF_CALLER (as column `entries`) for a statement of another module that reads
 * intents.intents as `i` (tasks/locked-reads.ts), with its three parameters' placeholders; their
 * values are callerParams(caller).
 */
export const callerEntriesColumn = (p: string, a: string, r: string): string => ENTRIES_OF_CALLER(p, a, r);

/** The facts a statement read with the ACL head columns and callerEntriesColumn. */
export const accessFactsOf = (row: RawFacts): AccessFacts => toFacts(row);

const toFacts = (row: RawFacts): AccessFacts => ({
  intentId: row.intent_id,
  head: { policy: row.acl_policy as AccessPolicy | null, defaultPermission: row.acl_default as IntentPermission | null, owner: row.acl_owner },
  entries: (row.entries ?? []).map((e) => ({
    principalType: e.principal_type as PrincipalType,
    principalId: e.principal_id,
    permission: e.permission as IntentPermission,
    expiresAt: e.expires_at === null ? null : new Date(e.expires_at),
  })),
});

const identity = (caller: Caller) => [caller.principal, caller.actor, JSON.stringify(caller.roles)];

/** The values of callerEntriesColumn's three placeholders, in order. */
export const callerParams = identity;

/** The access facts of an intent for a caller, in one statement; undefined when the intent does not exist. */
export async function readAccessFacts(query: Query, intentId: string, caller: Caller): Promise<AccessFacts | undefined> {
  const rows = await query<RawFacts>(
    "acl_facts",
    `select i.id as intent_id, i.acl_policy, i.acl_default, i.acl_owner, ${ENTRIES_OF_CALLER("$2", "$3", "$4")}
     from intents.intents i where i.id = $1`,
    [intentId, ...identity(caller)],
  );
  return rows[0] ? toFacts(rows[0]) : undefined;
}

/**
 * The resources whose intent decides access to them (intent-access.ts `from`), and how the
 * statement finds that intent: a task's, a plan's, a trace's (RFC-0020).
 */
const OWNED_BY_INTENT = {
  task_id: { name: "acl_task_facts", from: "intents.tasks r join intents.intents i on i.id = r.intent_id where r.id = $1" },
  plan_id: { name: "acl_plan_facts", from: "intents.plans r join intents.intents i on i.id = r.intent_id where r.id = $1" },
  trace_id: { name: "acl_trace_facts", from: "intents.traces r join intents.intents i on i.id = r.intent_id where r.trace_id = $1" },
} as const;
export type OwnedResource = keyof typeof OWNED_BY_INTENT;

/** The access facts of the intent a task, plan or trace belongs to; undefined when the resource does not exist. */
export async function readOwnedAccessFacts(query: Query, resource: OwnedResource, id: string, caller: Caller): Promise<AccessFacts | undefined> {
  const { name, from } = OWNED_BY_INTENT[resource];
  const rows = await query<RawFacts>(name, `select i.id as intent_id, i.acl_policy, i.acl_default, i.acl_owner, ${ENTRIES_OF_CALLER("$2", "$3", "$4")} from ${from}`, [id, ...identity(caller)]);
  return rows[0] ? toFacts(rows[0]) : undefined;
}

/**
 * The facts of many (intent, caller) pairs in one statement: what acl.check_many reads. Answers
 * in the order asked; undefined where the intent does not exist.
 */
export async function readManyAccessFacts(query: Query, checks: { intentId: string; caller: Caller }[]): Promise<(AccessFacts | undefined)[]> {
  const asked = checks.map((check, n) => ({ n, intent_id: check.intentId, p: check.caller.principal, a: check.caller.actor, r: check.caller.roles }));
  const rows = await query<RawFacts & { n: number }>(
    "acl_facts_many",
    `select c.n, i.id as intent_id, i.acl_policy, i.acl_default, i.acl_owner, ${ENTRIES_OF_CALLER("c.p", "c.a", "c.r")}
     from jsonb_to_recordset($1::jsonb) as c(n int, intent_id uuid, p text, a text, r jsonb)
     join intents.intents i on i.id = c.intent_id`,
    [JSON.stringify(asked)],
  );
  const found = new Map(rows.map((row) => [row.n, toFacts(row)]));
  return checks.map((_check, n) => found.get(n));
}

/** What a write check reads: the access facts and the intent's governance policy (null: none). */
export interface WriteFacts extends AccessFacts {
  governancePolicy: GovernancePolicy | null;
}

const toWriteFacts = (row: RawFacts & { governance_policy: GovernancePolicy | null }): WriteFacts => ({ ...toFacts(row), governancePolicy: row.governance_policy });

/**
 * The facts of acl.check_write: readAccessFacts and the governance policy, from the intent's row
 * in one statement (an intent with neither an ACL nor a policy: one primary-key read).
 */
export async function readWriteFacts(query: Query, intentId: string, caller: Caller): Promise<WriteFacts | undefined> {
  const rows = await query<RawFacts & { governance_policy: GovernancePolicy | null }>(
    "acl_write_facts",
    `select i.id as intent_id, i.acl_policy, i.acl_default, i.acl_owner, i.governance_policy, ${ENTRIES_OF_CALLER("$2", "$3", "$4")}
     from intents.intents i where i.id = $1`,
    [intentId, ...identity(caller)],
  );
  return rows[0] ? toWriteFacts(rows[0]) : undefined;
}

/** The same for many (intent, caller) pairs in one statement, as readManyAccessFacts: acl.check_write_many. */
export async function readManyWriteFacts(query: Query, checks: { intentId: string; caller: Caller }[]): Promise<(WriteFacts | undefined)[]> {
  const asked = checks.map((check, n) => ({ n, intent_id: check.intentId, p: check.caller.principal, a: check.caller.actor, r: check.caller.roles }));
  const rows = await query<RawFacts & { n: number; governance_policy: GovernancePolicy | null }>(
    "acl_write_facts_many",
    `select c.n, i.id as intent_id, i.acl_policy, i.acl_default, i.acl_owner, i.governance_policy, ${ENTRIES_OF_CALLER("c.p", "c.a", "c.r")}
     from jsonb_to_recordset($1::jsonb) as c(n int, intent_id uuid, p text, a text, r jsonb)
     join intents.intents i on i.id = c.intent_id`,
    [JSON.stringify(asked)],
  );
  const found = new Map(rows.map((row) => [row.n, toWriteFacts(row)]));
  return checks.map((_check, n) => found.get(n));
}

/**
 * The read rule of rules.ts (permissionOf(...) >= read) as a condition on intents.intents, for
 * lists that show only what the caller may read: no ACL, the owner, an open policy (its default
 * is at least read), or a live entry naming the caller. Admin keys are not asked (bypassesAcl).
 * acl.e2e.test.ts holds the list to GET of each intent.
 */
export const readableBy = (caller: Caller, now: Date): SQL => sql`(
  ${intents.aclPolicy} is null or ${intents.aclPolicy} = 'open' or ${intents.aclOwner} = ${caller.principal}
  or exists (select 1 from intents.acl_entries e
             where e.intent_id = ${intents.id} and (e.expires_at is null or e.expires_at > ${now})
               and ((e.principal_type = 'user' and e.principal_id = ${caller.principal})
                 or (e.principal_type = 'agent' and e.principal_id = ${caller.actor})
                 or (e.principal_type = 'group' and ${inList(sql`e.principal_id`, caller.roles)}))))`;

/** `column in (values)`, false for no values. */
export const inList = (column: SQL, values: readonly string[]): SQL => (values.length ? sql`${column} in (${sql.join(values.map((value) => sql`${value}`), sql`, `)})` : sql`false`);
