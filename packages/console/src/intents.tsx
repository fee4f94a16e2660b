import { useEffect, useState } from "preact/hooks";
import type { Session } from "./session";
import type { Intent } from "./inbox-store";
import { reportError, reportOk } from "./health";
import { mapLimit } from "./util";

/** Spend is read for the budgeted intents among the first rows shown (one costs read each). */
const SPEND_ROWS = 50;

const STATUSES = ["", "draft", "active", "blocked", "suspended_awaiting_input", "completed", "abandoned"] as const;

interface BudgetLimits {
  max_total_cents?: number;
}

/** The budget an intent was given (constraints.budget); its spend is on the intent's page (one costs read per intent). */
export function budgetOf(intent: Intent): BudgetLimits | undefined {
  return (intent.constraints as { budget?: BudgetLimits }).budget;
}

function BudgetUse({ spent, limit }: { spent: number | undefined; limit: number }) {
  const cents = (n: number) => (n / 100).toFixed(2);
  if (spent === undefined) return <span>{cents(limit)} budget</span>;
  const percent = limit > 0 ? Math.round((spent / limit) * 100) : 100;
  return (
    <span class="budget-use">
      <meter min={0} max={limit} value={Math.min(spent, limit)} high={limit * 0.8} aria-label={`${percent}% of the budget spent`} /> {cents(spent)} of {cents(limit)}
    </span>
  );
}

/** The intents list: a search over titles, a status filter, confidence and budget limit. */
export function Intents({ session }: { session: Session }) {
  const [status, setStatus] = useState("");
  const [search, setSearch] = useState("");
  const [intents, setIntents] = useState<Intent[] | null>(null);
  const [more, setMore] = useState(false);
  const [spent, setSpent] = useState<Record<string, number>>({});

  useEffect(() => {
    let live = true;
    const load = async () => {
      try {
        const page = await session.client.ops.intentsList({ query: { ...(status ? { status } : {}), limit: 500 } });
        if (!live) return;
        setIntents(page.intents);
        setMore(page.has_more);
        reportOk();
        const budgeted = page.intents.filter((intent) => budgetOf(intent)?.max_total_cents !== undefined).slice(0, SPEND_ROWS);
        const sums = await mapLimit(budgeted, 4, async (intent) => [intent.id, (await session.client.ops.costsList({ intent_id: intent.id, query: { limit: 1 } })).summary.total_cents] as const);
        if (live) setSpent(Object.fromEntries(sums));
      } catch (error) {
        reportError(error);
      }
    };
    void load();
    const timer = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [session, status]);

  const needle = search.trim().toLowerCase();
  const shown = (intents ?? []).filter((intent) => !needle || intent.title.toLowerCase().includes(needle) || intent.id.startsWith(needle) || (intent.description ?? "").toLowerCase().includes(needle));
  return (
    <section aria-labelledby="intents-title">
      <h1 id="intents-title">Intents</h1>
      <div class="filters">
        <label>
          Search <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} placeholder="title, description or id" />
        </label>
        <label>
          Status{" "}
          <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s || "any"}
              </option>
            ))}
          </select>
        </label>
      </div>
      {intents === null ? (
        <p aria-busy="true">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="empty">No intent matches.</p>
      ) : (
        <table class="list">
          <caption class="visually-hidden">Intents</caption>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Status</th>
              <th scope="col">Confidence</th>
              <th scope="col">Budget</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((intent) => {
              const budget = budgetOf(intent);
              return (
                <tr key={intent.id}>
                  <td>
                    <a href={`#/intents/${intent.id}`}>{intent.title}</a>
                  </td>
                  <td>
                    <span class={`status ${intent.status}`}>{intent.status}</span>
                  </td>
                  <td>{intent.confidence}</td>
                  <td>{budget?.max_total_cents === undefined ? "—" : <BudgetUse spent={spent[intent.id]} limit={budget.max_total_cents} />}</td>
                  <td>{new Date(intent.updated_at).toLocaleString()}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {more && <p class="hint">Showing the first 500; narrow by status to see others.</p>}
    </section>
  );
}
