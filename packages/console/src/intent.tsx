import { useEffect, useRef, useState } from "preact/hooks";
import type { ResponseOf } from "@intentmesh/sdk";
import { may, type Session } from "./session";
import { inbox, type Intent, type SuspensionRecord } from "./inbox-store";
import { Answer } from "./inbox";
import { reportError, reportOk } from "./health";
import { budgetOf } from "./intents";

type IntentEvent = ResponseOf<"intentsListEvents">["events"][number];
type TaskList = ResponseOf<"tasksList">;
type Task = Extract<TaskList, { tasks: unknown }>["tasks"][number];
type Lease = ResponseOf<"intentsListLeases">["leases"][number];
type Costs = ResponseOf<"costsList">;
type Attachment = ResponseOf<"attachmentsList">["attachments"][number];
type Channel = ResponseOf<"channelsList">[number];
type ChannelMessage = ResponseOf<"channelsListMessages">[number];
type Approval = ResponseOf<"governanceListApprovals">["approvals"][number];
type Plan = ResponseOf<"plansList">[number];

/** What the page reads beside the intent; each part on its own, so one refused read leaves the others. */
/** An intent as the graph lists show it. */
type Related = ResponseOf<"graphChildren">["children"][number];

interface Extras {
  graph: { parent: Related | null; children: Related[]; dependencies: Related[]; dependents: Related[] } | string;
  attachments: Attachment[] | string;
  channels: { channel: Channel; messages: ChannelMessage[] | string }[] | string;
  policy: unknown;
  approvals: Approval[] | string;
  plans: Plan[] | string;
}

const refusal = (result: PromiseSettledResult<unknown>): string => {
  const reason = (result as PromiseRejectedResult).reason as { message?: string; code?: string };
  return `${reason?.message ?? String(reason)}${reason?.code ? ` (${reason.code})` : ""}`;
};

const LOG_LIMIT = 500;

/**
 * One intent: its state (a readable JSON view), its live event log (the intent's SSE stream,
 * resumed from the last event read, so nothing falls between), tasks, leases, costs against the
 * budget. Every event re-reads the rest, so the page stays current.
 */
export function IntentPage({ session, id }: { session: Session; id: string }) {
  const [intent, setIntent] = useState<Intent | null>(null);
  const [missing, setMissing] = useState<string | null>(null);
  const [events, setEvents] = useState<IntentEvent[]>([]);
  const [tasks, setTasks] = useState<Task[]>([]);
  const [leases, setLeases] = useState<Lease[]>([]);
  const [costs, setCosts] = useState<Costs | null>(null);
  const [live, setLive] = useState(false);
  const [extras, setExtras] = useState<Extras | null>(null);
  const reread = useRef<() => void>(() => {});

  useEffect(() => {
    const ops = session.client.ops;
    const stop = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const readAll = async () => {
      try {
        const [i, t, l, c] = await Promise.all([
          ops.intentsGet({ intent_id: id }),
          ops.tasksList({ intent_id: id, query: { limit: 200 } }),
          ops.intentsListLeases({ intent_id: id, query: {} }),
          ops.costsList({ intent_id: id, query: {} }),
        ]);
        if (stop.signal.aborted) return;
        setIntent(i);
        setTasks(Array.isArray(t) ? t : t.tasks);
        setLeases(l.leases);
        setCosts(c);
        reportOk();
        setExtras(await readExtras());
      } catch (error) {
        if ((error as { status?: number }).status === 404) setMissing("No such intent, or your key may not read it.");
        else {
          reportError(error);
          // A read that failed (the server busy or down) is tried again: the page recovers by itself.
          if (!stop.signal.aborted) timer = setTimeout(() => void readAll(), 1000);
        }
      }
    };
    const readExtras = async (): Promise<Extras> => {
      const [graph, attachments, channels, policy, approvals, plans] = await Promise.allSettled([
        // RFC-0002: its parent (the nearest ancestor), its children, what it depends on, what depends on it.
        Promise.all([
          ops.graphAncestors({ intent_id: id, query: { limit: 1 } }),
          ops.graphChildren({ intent_id: id, query: { limit: 100 } }),
          ops.graphDependencies({ intent_id: id, query: { limit: 100 } }),
          ops.graphDependents({ intent_id: id, query: { limit: 100 } }),
        ]).then(([ancestors, children, dependencies, dependents]) => ({
          parent: ancestors.ancestors[0] ?? null,
          children: children.children,
          dependencies: dependencies.dependencies,
          dependents: dependents.dependents,
        })),
        ops.attachmentsList({ intent_id: id, query: {} }),
        ops.channelsList({ intent_id: id, query: {} }).then((page) =>
          Promise.all(
            page.map(async (channel: Channel) => ({
              channel,
              messages: await ops.channelsListMessages({ channel_id: channel.id, query: { limit: 20 } }).catch((error: Error) => error.message),
            })),
          ),
        ),
        ops.governancePolicyGet({ intent_id: id }),
        ops.governanceListApprovals({ intent_id: id, query: {} }),
        ops.plansList({ intent_id: id }),
      ]);
      return {
        graph: graph.status === "fulfilled" ? graph.value : refusal(graph),
        attachments: attachments.status === "fulfilled" ? attachments.value.attachments : refusal(attachments),
        channels: channels.status === "fulfilled" ? channels.value : refusal(channels),
        policy: policy.status === "fulfilled" ? policy.value : refusal(policy),
        approvals: approvals.status === "fulfilled" ? approvals.value.approvals : refusal(approvals),
        plans: plans.status === "fulfilled" ? plans.value : refusal(plans),
      };
    };
    reread.current = () => {
      clearTimeout(timer);
      timer = setTimeout(() => void readAll(), 200);
    };
    const follow = async () => {
      try {
        const page = await ops.intentsListEvents({ intent_id: id, query: { tail: "true", limit: LOG_LIMIT } });
        if (stop.signal.aborted) return;
        setEvents(page.events);
        const last = page.events.at(-1);
        const stream = session.client.subscribe("intents", id, {
          from: { lastEventId: String(last?.sequence ?? 0) },
          signal: stop.signal,
          onConnect: () => {
            setLive(true);
            reportOk();
          },
          onDisconnect: (error) => {
            setLive(false);
            reportError(error);
          },
        });
        for await (const message of stream) {
          const event = message.data as IntentEvent;
          setEvents((previous) => (previous.some((e) => e.id === event.id) ? previous : [...previous, event].slice(-LOG_LIMIT)));
          reread.current();
        }
      } catch (error) {
        if (!stop.signal.aborted) reportError(error);
      }
    };
    void readAll();
    void follow();
    return () => {
      stop.abort();
      clearTimeout(timer);
    };
  }, [session, id]);

  if (missing) return <p class="empty">{missing}</p>;
  if (!intent) return <p aria-busy="true">Loading…</p>;
  return (
    <section aria-labelledby="intent-title" class="intent-page">
      <p>
        <a href="#/intents">← Intents</a>
      </p>
      <h1 id="intent-title">{intent.title}</h1>
      <p>
        <span class={`status ${intent.status}`}>{intent.status}</span> <span class="muted">confidence {intent.confidence} · version {intent.version} · created by {intent.created_by}</span>
      </p>
      {intent.description && <p>{intent.description}</p>}
      <Waiting session={session} intent={intent} onAnswered={() => reread.current()} />
      <div class="grid">
        <section aria-labelledby="state-title">
          <h2 id="state-title">State</h2>
          <JsonView value={intent.state} />
        </section>
        <section aria-labelledby="costs-title">
          <h2 id="costs-title">Costs</h2>
          <CostChart costs={costs} limit={budgetOf(intent)?.max_total_cents} />
        </section>
        <section aria-labelledby="tasks-title">
          <h2 id="tasks-title">Tasks</h2>
          {tasks.length === 0 ? (
            <p class="empty">No tasks.</p>
          ) : (
            <table class="list">
              <thead>
                <tr>
                  <th scope="col">Title</th>
                  <th scope="col">Status</th>
                  <th scope="col">Agent</th>
                </tr>
              </thead>
              <tbody>
                {tasks.map((task) => (
                  <tr key={task.id}>
                    <td>{task.title}</td>
                    <td>
                      <span class={`status ${task.status}`}>{task.status}</span>
                    </td>
                    <td>{task.assigned_agent ?? "—"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <section aria-labelledby="leases-title">
          <h2 id="leases-title">Leases</h2>
          {leases.length === 0 ? (
            <p class="empty">No leases held.</p>
          ) : (
            <ul class="plain">
              {leases.map((lease) => (
                <li key={lease.id}>
                  <code>{lease.scope}</code> held by {lease.agent_id} until {new Date(lease.expires_at).toLocaleTimeString()}
                </li>
              ))}
            </ul>
          )}
        </section>
      </div>
      {extras && <ExtrasView extras={extras} />}
      <section aria-labelledby="log-title">
        <h2 id="log-title">
          Event log <span class={`live ${live ? "on" : "off"}`}>{live ? "live" : "connecting…"}</span>
        </h2>
        <ol class="log" aria-live="polite" aria-label="Events, newest last">
          {events.map((event) => (
            <li key={event.id} data-event-type={event.event_type}>
              <span class="seq">#{event.sequence}</span> <time dateTime={event.created_at}>{new Date(event.created_at).toLocaleTimeString()}</time> <strong>{event.event_type}</strong> <span class="muted">by {event.actor}</span>
              {Object.keys(event.payload).length > 0 && <code class="payload">{JSON.stringify(event.payload)}</code>}
            </li>
          ))}
        </ol>
      </section>
    </section>
  );
}

/** The intent's suspension while it awaits input: the question, and the answer controls the key may use. */
function Waiting({ session, intent, onAnswered }: { session: Session; intent: Intent; onAnswered: () => void }) {
  const [busy, setBusy] = useState(false);
  const record = intent.state._suspension as SuspensionRecord | undefined;
  if (intent.status !== "suspended_awaiting_input" || !record || typeof record !== "object" || record.resolution) return null;
  const respond = async (value: unknown) => {
    setBusy(true);
    try {
      await session.client.ops.governanceRespond({ intent_id: intent.id, body: { suspension_id: record.id, value } });
      inbox.drop(`s:${record.id}`);
      onAnswered();
    } catch (error) {
      reportError(error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card waiting" aria-labelledby="waiting-title">
      <h2 id="waiting-title">Waiting for an answer</h2>
      <p class="question">{record.question}</p>
      {may(session, "governanceRespond") && <Answer record={record} busy={busy} respond={(value) => void respond(value)} />}
    </section>
  );
}

function ExtrasView({ extras }: { extras: Extras }) {
  const refused = (value: unknown): value is string => typeof value === "string";
  return (
    <div class="grid">
      <section aria-labelledby="approvals-title">
        <h2 id="approvals-title">Approvals</h2>
        {refused(extras.approvals) ? (
          <p class="muted">{extras.approvals}</p>
        ) : extras.approvals.length === 0 ? (
          <p class="empty">No approvals.</p>
        ) : (
          <ul class="plain">
            {extras.approvals.map((approval) => (
              <li key={approval.id}>
                <span class={`status ${approval.status}`}>{approval.status}</span> <strong>{approval.action}</strong> <span class="muted">by {approval.requested_by}{approval.decided_by ? `, decided by ${approval.decided_by}` : ""}</span>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="plans-title">
        <h2 id="plans-title">Plans</h2>
        {refused(extras.plans) ? (
          <p class="muted">{extras.plans}</p>
        ) : extras.plans.length === 0 ? (
          <p class="empty">No plans.</p>
        ) : (
          extras.plans.map((plan) => <PlanView key={plan.id} plan={plan} />)
        )}
      </section>
      <section aria-labelledby="graph-title">
        <h2 id="graph-title">Graph</h2>
        {refused(extras.graph) ? (
          <p class="muted">{extras.graph}</p>
        ) : !extras.graph.parent && [extras.graph.children, extras.graph.dependencies, extras.graph.dependents].every((list) => list.length === 0) ? (
          <p class="empty">No parent, children or dependencies.</p>
        ) : (
          <dl class="graph">
            {extras.graph.parent && <RelatedList label="Parent" items={[extras.graph.parent]} />}
            <RelatedList label="Children" items={extras.graph.children} />
            <RelatedList label="Depends on" items={extras.graph.dependencies} />
            <RelatedList label="Needed by" items={extras.graph.dependents} />
          </dl>
        )}
      </section>
      <section aria-labelledby="policy-title">
        <h2 id="policy-title">Governance policy</h2>
        {refused(extras.policy) ? <p class="muted">{extras.policy}</p> : <JsonView value={extras.policy} />}
      </section>
      <section aria-labelledby="attachments-title">
        <h2 id="attachments-title">Attachments</h2>
        {refused(extras.attachments) ? (
          <p class="muted">{extras.attachments}</p>
        ) : extras.attachments.length === 0 ? (
          <p class="empty">No attachments.</p>
        ) : (
          <ul class="plain">
            {extras.attachments.map((attachment) => (
              <li key={attachment.id}>
                <code>{attachment.filename}</code> <span class="muted">{attachment.mime_type}, by {attachment.uploaded_by}</span>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="channels-title">
        <h2 id="channels-title">Channels</h2>
        {refused(extras.channels) ? (
          <p class="muted">{extras.channels}</p>
        ) : extras.channels.length === 0 ? (
          <p class="empty">No channels.</p>
        ) : (
          extras.channels.map(({ channel, messages }) => (
            <details key={channel.id}>
              <summary>
                <strong>{channel.name}</strong> <span class="muted">{channel.status}, {channel.members.length} members</span>
              </summary>
              {refused(messages) ? (
                <p class="muted">{messages}</p>
              ) : messages.length === 0 ? (
                <p class="empty">No messages.</p>
              ) : (
                <ol class="plain">
                  {messages.map((message) => (
                    <li key={message.id}>
                      <span class="muted">{message.sender}{message.to ? ` → ${message.to}` : ""} ({message.message_type})</span> <code class="payload">{JSON.stringify(message.payload)}</code>
                    </li>
                  ))}
                </ol>
              )}
            </details>
          ))
        )}
      </section>
    </div>
  );
}

/**
 * One plan (RFC-0012): its state, its progress as the server computes it from the tasks (done of
 * total, the tasks waiting on a suspended intent), its steps in plan order, and its checkpoints.
 */
function PlanView({ plan }: { plan: Plan }) {
  const { progress } = plan;
  const name = plan.title ?? `Plan ${plan.id.slice(0, 8)}`;
  return (
    <article class="plan" aria-label={`Plan ${name}`}>
      <h3>
        {name} <span class={`status ${plan.state}`}>{plan.state}</span>
      </h3>
      <p>
        <progress max={Math.max(progress.total, 1)} value={progress.done} aria-label={`${name} progress`} /> {progress.done} of {progress.total} done ({progress.percent_complete}%)
        {progress.suspended_tasks.length > 0 && <span class="status suspended_awaiting_input"> {progress.suspended_tasks.length} waiting on an answer</span>}
      </p>
      <ol class="plain">
        {plan.steps.map((step) => (
          <li key={step.task_id}>
            <span class={`status ${step.status}`}>{step.status}</span> {step.title} <span class="muted">{step.assigned_agent ?? ""}</span>
          </li>
        ))}
      </ol>
      {plan.checkpoints.length > 0 && (
        <ul class="plain" aria-label={`Checkpoints of ${name}`}>
          {plan.checkpoints.map((checkpoint, index) => (
            <li key={String(checkpoint.id ?? index)}>
              checkpoint <strong>{String(checkpoint.name ?? checkpoint.id ?? index)}</strong> <span class="muted">{String(checkpoint.status ?? "pending")}</span>
            </li>
          ))}
        </ul>
      )}
    </article>
  );
}

/** One relation of the graph: links to the related intents with their status. */
function RelatedList({ label, items }: { label: string; items: Related[] }) {
  if (items.length === 0) return null;
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <ul class="plain">
          {items.map((item) => (
            <li key={item.id}>
              <a href={`#/intents/${item.id}`}>{item.title}</a> <span class={`status ${item.status}`}>{item.status}</span>
            </li>
          ))}
        </ul>
      </dd>
    </>
  );
}

/** A JSON value as an indented, collapsible tree. */
function JsonView({ value }: { value: unknown }) {
  if (value === null || typeof value !== "object") return <code class={`json ${typeof value}`}>{JSON.stringify(value)}</code>;
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  if (entries.length === 0) return <code class="json">{Array.isArray(value) ? "[]" : "{}"}</code>;
  return (
    <ul class="json-tree">
      {entries.map(([key, member]) => (
        <li key={key}>
          {member !== null && typeof member === "object" ? (
            <details open>
              <summary>
                <span class="json-key">{key}</span>
              </summary>
              <JsonView value={member} />
            </details>
          ) : (
            <>
              <span class="json-key">{key}</span>: <JsonView value={member} />
            </>
          )}
        </li>
      ))}
    </ul>
  );
}

/** Spend in cents by agent as bars, against the budget's total limit when there is one. */
function CostChart({ costs, limit }: { costs: Costs | null; limit: number | undefined }) {
  if (!costs) return <p aria-busy="true">Loading…</p>;
  const spent = costs.summary.total_cents;
  const agents = Object.entries(costs.summary.by_agent_cents);
  const scale = Math.max(limit ?? 0, spent, 1);
  const cents = (n: number) => (n / 100).toFixed(2);
  return (
    <div>
      <p>
        {cents(spent)} spent{limit !== undefined ? ` of ${cents(limit)} (${Math.round((spent / limit) * 100)}%)` : ", no budget"}
        {costs.budget.blocked && <strong class="danger-text"> — blocked: budget exceeded</strong>}
      </p>
      <svg class="chart" role="img" aria-label={`Costs: ${cents(spent)} spent${limit !== undefined ? ` of a ${cents(limit)} budget` : ""}`} viewBox={`0 0 300 ${24 * (agents.length + 1)}`} preserveAspectRatio="none">
        <rect x="0" y="2" width={(spent / scale) * 300} height="18" class="bar total" />
        {limit !== undefined && <line x1={(limit / scale) * 300} x2={(limit / scale) * 300} y1="0" y2={24 * (agents.length + 1)} class="limit" />}
        {agents.map(([agent, value], index) => (
          <rect key={agent} x="0" y={24 * (index + 1) + 2} width={(value / scale) * 300} height="18" class="bar agent">
            <title>{`${agent}: ${cents(value)}`}</title>
          </rect>
        ))}
      </svg>
      {agents.length > 0 && (
        <ul class="plain legend">
          {agents.map(([agent, value]) => (
            <li key={agent}>
              {agent}: {cents(value)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
