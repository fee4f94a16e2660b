import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import {
  BUDGET_EXCEEDED_REASON,
  INTENT_EVENT_SCHEMA,
  intentEventSubject,
  intentEventTypes,
  isoTimestamp,
  LIMITS,
  MAX_COST_AGENTS_PER_INTENT,
  SCHEMA_HEADER,
  type CostRecord,
  type GovernancePolicy,
  type IntentEvent,
} from "@intentmesh/contracts";
import { traceCarrier } from "@intentmesh/bus";
import { rowsOf, withParams, type DatabaseHandle, type Tx } from "@intentmesh/db";
import { intentEventInserts, SHOWN_WITHIN_PAGE_BYTES } from "../kernel/statements";

type Query = DatabaseHandle["query"];

/**
 * Recording a cost is ONE statement, also when it crosses a budget line: it locks the intent
 * row, inserts the record, adds it to the running totals (intent, agent, cost type) and, from the
 * totals the upserts return, decides in SQL whether a threshold was crossed or a limit exceeded;
 * then it writes the budget_alert events, the move to blocked and their outbox rows.
 *
 * Why the decision is made from the upserts' RETURNING values: an upsert operates on the newest
 * committed row, so the total it returns includes every record committed before it, even ones
 * committed while this statement waited for the intent lock (a plain read would see the
 * statement's older snapshot). `before = after - this record's cents` is therefore exact, and
 * of two concurrent records exactly one sees a line crossed. The intent row lock (taken first,
 * `for no key update`, which returns the newest row version) gives the current budget and status
 * and serializes the block with status changes and budget updates.
 *
 * Rules (the pure rules of costs/budget.ts, in SQL):
 * - threshold of a limit L at p percent: crossed when before * 100 < L * p <= after * 100;
 * - L exceeded: before <= L < after; one record above max_per_call_cents exceeds that limit;
 * - an exceeded limit blocks an active intent (status blocked, version + 1, blocked_reason
 *   budget_exceeded, status_changed); an intent already blocked by hand keeps its status
 *   and takes the reason, so agents are refused there too. Other statuses are not blocked.
 * Budget fields that are not JSON numbers (intents older than the budget check) are ignored.
 *
 * Bound: a record from an agent new to the intent is refused (nothing written, `accepted` 0)
 * once the intent has costs from MAX_COST_AGENTS_PER_INTENT agents. The count sits in the
 * cost_totals row, read `for update` after the intent lock, so it is current and exact.
 *
 * Gate (POST /costs only, `$21` true): the statement also reads the intent's governance policy and
 * whether it has an ACL, and writes only when what the handler checked still holds: the policy is
 * the one it enforced ($22, null: none) and the intent has no ACL unless the caller's permission
 * was decided ($23). Otherwise it writes nothing (`passed` 0) and answers the policy and the ACL
 * flag, for the handler to check and run it again. So an intent without a policy or an ACL costs
 * POST /costs this one statement, and a write never commits under a policy other than the one checked.
 */
/** The budget events' log and outbox rows, from the CTE ww (one row per event). */
const BUDGET_EVENTS = intentEventInserts(
  "ww",
  { id: "ww.eid", intentId: "$1::uuid", sequence: "ww.seq", eventType: "ww.event_type", actor: "$12::text", payload: "ww.payload", createdAt: "$10::timestamptz", wire: "ww.wire", subject: "ww.subject", headers: "$14::jsonb" },
  { on: "e.id = ww.eid", order: "ww.seq" },
);

const RECORD_COST_SQL = `
with i as (
  select id, status, blocked_reason, constraints->'budget' as b, governance_policy as gp, acl_policy is not null as has_acl
  from intents.intents where id = $1::uuid for no key update),
pass as (
  select i.* from i
  where not $21::bool or (i.gp is not distinct from $22::jsonb and ($23::bool or not i.has_acl))),
known as (
  select
    exists(select 1 from intents.cost_agent_totals where intent_id = $1::uuid and agent_id = $3::text) as agent_known,
    coalesce((select agent_count from intents.cost_totals where intent_id = $1::uuid for update), 0) as agents
  from pass),
ok as (
  select pass.* from pass, known where known.agent_known or known.agents < $20::int),
lim as (
  select ok.*,
    case when jsonb_typeof(b->'max_total_cents') = 'number' then (b->>'max_total_cents')::numeric end as max_total,
    case when jsonb_typeof(b->'max_per_agent_cents') = 'number' then (b->>'max_per_agent_cents')::numeric end as max_agent,
    case when jsonb_typeof(b->'max_per_call_cents') = 'number' then (b->>'max_per_call_cents')::numeric end as max_call,
    case when jsonb_typeof(b->'alert_threshold_percent') = 'number' then (b->>'alert_threshold_percent')::numeric end as pct
  from ok),
c as (
  insert into intents.costs (id, intent_id, agent_id, cost_type, amount, unit, cents, provider, metadata, recorded_at, wire)
  select $2::uuid, ok.id, $3::text, $4::text, $5::numeric, $6::text, $7::numeric, $8::text, $9::jsonb, $10::timestamptz, $11::text from ok),
a as (
  insert into intents.cost_agent_totals as a (intent_id, agent_id, record_count, amount, cents)
  select ok.id, $3::text, 1, $5::numeric, coalesce($7::numeric, 0) from ok
  on conflict (intent_id, agent_id) do update set
    record_count = a.record_count + 1, amount = a.amount + excluded.amount, cents = a.cents + excluded.cents
  returning a.cents, (a.xmax = 0) as inserted),
t as (
  insert into intents.cost_totals as t (intent_id, record_count, agent_count, amount, cents, max_call_cents)
  select ok.id, 1, (select count(*)::int from a where a.inserted), $5::numeric, coalesce($7::numeric, 0), $7::numeric from ok
  on conflict (intent_id) do update set
    record_count = t.record_count + 1, agent_count = t.agent_count + excluded.agent_count,
    amount = t.amount + excluded.amount, cents = t.cents + excluded.cents,
    max_call_cents = greatest(t.max_call_cents, excluded.max_call_cents)
  returning t.cents),
y as (
  insert into intents.cost_type_totals as y (intent_id, cost_type, record_count, amount)
  select ok.id, $4::text, 1, $5::numeric from ok
  on conflict (intent_id, cost_type) do update set record_count = y.record_count + 1, amount = y.amount + excluded.amount),
f as (
  select lim.*, coalesce($7::numeric, 0) as cents,
    t.cents as total, t.cents - coalesce($7::numeric, 0) as total_before,
    a.cents as agent, a.cents - coalesce($7::numeric, 0) as agent_before
  from lim, t, a),
g as (
  select f.*,
    (f.pct is not null and f.max_total is not null
      and f.total_before * 100 < f.max_total * f.pct and f.total * 100 >= f.max_total * f.pct) as alert_total,
    (f.pct is not null and f.max_agent is not null
      and f.agent_before * 100 < f.max_agent * f.pct and f.agent * 100 >= f.max_agent * f.pct) as alert_agent,
    case
      when f.max_call is not null and f.cents > f.max_call then 'max_per_call_cents'
      when f.max_total is not null and f.total_before <= f.max_total and f.total > f.max_total then 'max_total_cents'
      when f.max_agent is not null and f.agent_before <= f.max_agent and f.agent > f.max_agent then 'max_per_agent_cents'
    end as rule
  from f),
h as (
  select g.*,
    (g.rule is not null and g.status = 'active') as blocks,
    (g.rule is not null and g.status = 'blocked' and g.blocked_reason is distinct from '${BUDGET_EXCEEDED_REASON}') as marks,
    g.alert_total::int + g.alert_agent::int + (g.rule is not null and g.status = 'active')::int as n
  from g),
u as (
  update intents.intents x set
    event_seq = x.event_seq + h.n,
    status = case when h.blocks then 'blocked' else x.status end,
    version = x.version + h.blocks::int,
    blocked_reason = case when h.blocks or h.marks then '${BUDGET_EXCEEDED_REASON}' else x.blocked_reason end,
    updated_at = case when h.blocks then $10::timestamptz else x.updated_at end
  from h where x.id = h.id and (h.n > 0 or h.marks)
  returning x.event_seq, x.version),
ev as (
  select u.event_seq - h.n + row_number() over (order by v.k) as seq, v.k, v.event_type, v.payload, v.subject
  from u, h, lateral (values
    (1, '${intentEventTypes.budgetAlert}', case when h.alert_total then jsonb_build_object(
       'scope', 'total', 'agent_id', null, 'threshold_percent', h.pct,
       'limit_cents', h.max_total, 'threshold_cents', trim_scale(h.max_total * h.pct / 100),
       'spent_cents', trim_scale(h.total), 'previous_cents', trim_scale(h.total_before),
       'percent_used', round(h.total * 100 / nullif(h.max_total, 0), 2), 'cost_id', $2::uuid) end, $15::text),
    (2, '${intentEventTypes.budgetAlert}', case when h.alert_agent then jsonb_build_object(
       'scope', 'agent', 'agent_id', $3::text, 'threshold_percent', h.pct,
       'limit_cents', h.max_agent, 'threshold_cents', trim_scale(h.max_agent * h.pct / 100),
       'spent_cents', trim_scale(h.agent), 'previous_cents', trim_scale(h.agent_before),
       'percent_used', round(h.agent * 100 / nullif(h.max_agent, 0), 2), 'cost_id', $2::uuid) end, $15::text),
    (3, '${intentEventTypes.statusChanged}', case when h.blocks then jsonb_build_object(
       'from', 'active', 'to', 'blocked', 'reason', '${BUDGET_EXCEEDED_REASON}', 'version', u.version,
       'budget', jsonb_build_object(
         'rule', h.rule,
         'limit_cents', case h.rule when 'max_per_call_cents' then h.max_call when 'max_total_cents' then h.max_total else h.max_agent end,
         'spent_cents', trim_scale(case h.rule when 'max_per_call_cents' then h.cents when 'max_total_cents' then h.total else h.agent end),
         'agent_id', $3::text, 'cost_id', $2::uuid)) end, $16::text)
  ) as v(k, event_type, payload, subject)
  where v.payload is not null),
w as (
  select ev.*, (array[$17::uuid, $18::uuid, $19::uuid])[ev.k] as eid from ev),
ww as (
  select w.*, json_build_object(
    'sequence', w.seq, 'id', w.eid, 'intent_id', $1::uuid, 'event_type', w.event_type,
    'actor', $12::text, 'payload', w.payload, 'created_at', $13::text)::text as wire
  from w),
e as (${BUDGET_EVENTS.events}),
o as (${BUDGET_EVENTS.outbox})
select (select count(*)::int from i) as found,
       (select count(*)::int from pass) as passed,
       (select count(*)::int from ok) as accepted,
       (select coalesce(json_agg(e.wire::json order by e.sequence), '[]'::json)::text from e) as events,
       (select gp from i where not exists (select 1 from pass)) as governance_policy,
       (select has_acl from i) as has_acl`;

/** A cost about to be recorded, with the acting agent resolved and its cents decided. */
export interface NewCost {
  agent_id: string;
  cost_type: CostRecord["cost_type"];
  amount: number;
  unit: CostRecord["unit"];
  provider: string | null;
  metadata: Record<string, unknown>;
  cents: number | null;
}

export interface RecordedCost {
  found: boolean;
  /**
   * False when the record would bring a new agent to an intent that already has costs from
   * MAX_COST_AGENTS_PER_INTENT agents: nothing was written.
   */
  accepted: boolean;
  record: CostRecord;
  /** The record's JSON, as the API returns it (built once, stored as the record's wire form). */
  wire: string;
  /** The budget events written with it (budget_alert, status_changed), oldest first. */
  events: IntentEvent[];
  /** Set when the gate held the write back (nothing written): what the intent's row says now. */
  gated?: { policy: GovernancePolicy | null; hasAcl: boolean };
}

/**
 * What POST /costs checked before the statement (see Gate above): the governance policy it
 * enforced (null: the intent had none) and whether the caller's ACL permission was decided
 * (true also for callers the ACL does not bind).
 */
export interface CheckedBeforeWrite {
  policy: GovernancePolicy | null;
  aclChecked: boolean;
}

/** Numbers go to Postgres as text, so `numeric` receives exactly the decimal JavaScript prints. */
const decimal = (value: number) => String(value);

function prepare(intentId: string, cost: NewCost, actor: string, at: Date, checked: CheckedBeforeWrite | null) {
  const record: CostRecord = {
    id: randomUUID(),
    intent_id: intentId,
    agent_id: cost.agent_id,
    cost_type: cost.cost_type,
    amount: cost.amount,
    unit: cost.unit,
    provider: cost.provider,
    metadata: cost.metadata,
    cents: cost.cents,
    recorded_at: isoTimestamp(at),
  };
  const wire = JSON.stringify(record);
  const params = [
    intentId,
    record.id,
    cost.agent_id,
    cost.cost_type,
    decimal(cost.amount),
    cost.unit,
    cost.cents === null ? null : decimal(cost.cents),
    cost.provider,
    JSON.stringify(cost.metadata),
    at,
    wire,
    actor,
    record.recorded_at,
    JSON.stringify({ ...traceCarrier(), [SCHEMA_HEADER]: INTENT_EVENT_SCHEMA }),
    intentEventSubject(intentId, intentEventTypes.budgetAlert),
    intentEventSubject(intentId, intentEventTypes.statusChanged),
    randomUUID(),
    randomUUID(),
    randomUUID(),
    MAX_COST_AGENTS_PER_INTENT,
    checked !== null,
    checked === null || checked.policy === null ? null : JSON.stringify(checked.policy),
    checked?.aclChecked ?? true,
  ];
  return { record, wire, params };
}

type Row = { found: number; passed: number; accepted: number; events: string; governance_policy: GovernancePolicy | null; has_acl: boolean | null };

function result(row: Row | undefined, record: CostRecord, wire: string): RecordedCost {
  const events = row && row.accepted ? (JSON.parse(row.events) as IntentEvent[]) : [];
  const recorded: RecordedCost = { found: Boolean(row?.found), accepted: Boolean(row?.accepted), record, wire, events };
  if (row && row.found && !row.passed) recorded.gated = { policy: row.governance_policy, hasAcl: Boolean(row.has_acl) };
  return recorded;
}

/**
 * Runs the statement, and once more when it refused a new agent at the limit. Why the second
 * run: the statement reads "does this agent already have costs" from its snapshot, taken before
 * it waited for the intent lock, so an agent whose first cost committed during that wait looks
 * new. A refusal writes nothing, and the second run's snapshot sees that commit.
 */
async function runRecordingStatement(run: () => Promise<Row | undefined>, record: CostRecord, wire: string): Promise<RecordedCost> {
  const first = result(await run(), record, wire);
  if (!first.found || first.accepted || first.gated) return first;
  return result(await run(), record, wire);
}

/**
 * POST /intents/{id}/costs: the statement as a named prepared statement, outside any transaction,
 * gated on what the handler checked (`gated` in the answer when that no longer holds).
 */
export async function recordCostStatement(query: Query, intentId: string, cost: NewCost, actor: string, at: Date, checked: CheckedBeforeWrite): Promise<RecordedCost> {
  const { record, wire, params } = prepare(intentId, cost, actor, at, checked);
  return runRecordingStatement(async () => (await query<Row>("intents_record_cost", RECORD_COST_SQL, params))[0], record, wire);
}

/** The same statement inside a caller's transaction (the intent may already be locked by it). */
export async function recordCostInTransaction(tx: Tx, intentId: string, cost: NewCost, actor: string, at: Date): Promise<RecordedCost> {
  const { record, wire, params } = prepare(intentId, cost, actor, at, null);
  return runRecordingStatement(async () => rowsOf<Row>(await tx.execute(withParams(RECORD_COST_SQL, params)))[0], record, wire);
}


/**
 * GET /intents/{id}/costs as one statement: a page of stored wire forms joined by Postgres, the
 * summary from the running totals (a few rows whatever the number of records), and the budget.
 * `budget` is null when the intent does not exist.
 */
export async function selectCostPage(query: Query, intentId: string, after: number, limit: number) {
  const rows = await query<{ budget: string | null; fetched: number; shown: number; last: string | number | null; costs: string; summary: string }>(
    "intents_cost_page",
    `with page as (
       select seq, wire from intents.costs
       where intent_id = $1::uuid and seq > $2::bigint order by seq limit $3::int + 1),
     ${SHOWN_WITHIN_PAGE_BYTES("seq", "$3", "$4")}
     select
       (select count(*)::int from shown) as shown,
       (select json_build_object(
          'limits', case when jsonb_typeof(constraints->'budget') = 'object' then constraints->'budget' end,
          'blocked', status = 'blocked' and blocked_reason is not distinct from '${BUDGET_EXCEEDED_REASON}')::text
        from intents.intents where id = $1::uuid) as budget,
       (select count(*)::int from page) as fetched,
       (select max(seq) from shown) as last,
       (select '[' || coalesce(string_agg(wire, ',' order by seq), '') || ']' from shown) as costs,
       (select json_build_object(
          'total', coalesce(trim_scale(t.amount), 0),
          'by_type', (select coalesce(json_object_agg(cost_type, trim_scale(amount) order by cost_type), '{}'::json)
                      from intents.cost_type_totals where intent_id = $1::uuid),
          'by_agent', (select coalesce(json_object_agg(agent_id, trim_scale(amount) order by agent_id), '{}'::json)
                       from intents.cost_agent_totals where intent_id = $1::uuid),
          'count', coalesce(t.record_count, 0),
          'total_cents', coalesce(trim_scale(t.cents), 0),
          'by_agent_cents', (select coalesce(json_object_agg(agent_id, trim_scale(cents) order by agent_id), '{}'::json)
                             from intents.cost_agent_totals where intent_id = $1::uuid))::text
        from (select 1) as one left join intents.cost_totals t on t.intent_id = $1::uuid) as summary`,
    [intentId, after, limit, LIMITS.pageBytes],
  );
  const row = rows[0]!;
  return { budget: row.budget, hasMore: Number(row.fetched) > Number(row.shown), last: row.last === null ? null : Number(row.last), costsJson: row.costs, summaryJson: row.summary };
}

/** The spend a budget is checked against, read after the intent row is locked (so it is current). */
export async function selectSpend(tx: Tx, intentId: string) {
  const rows = rowsOf<{ total_cents: string | null; max_call_cents: string | null; max_agent_cents: string | null }>(
    await tx.execute(sql`
      select t.cents::text as total_cents, t.max_call_cents::text as max_call_cents,
             (select max(cents)::text from intents.cost_agent_totals where intent_id = ${intentId}) as max_agent_cents
      from (select 1) as one left join intents.cost_totals t on t.intent_id = ${intentId}`),
  );
  const row = rows[0];
  return { total_cents: row?.total_cents ?? "0", max_call_cents: row?.max_call_cents ?? null, max_agent_cents: row?.max_agent_cents ?? null };
}
