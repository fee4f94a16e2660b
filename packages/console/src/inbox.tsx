import { useRef, useState } from "preact/hooks";
import { may, type Session } from "./session";
import { inbox, useInbox, type InboxItem, type SuspensionRecord } from "./inbox-store";
import { reportError } from "./health";
import { ago, duration, useNow } from "./util";

/**
 * Every suspension awaiting input and every pending approval, answerable in one or two clicks.
 * Keyboard: ↓/j and ↑/k move between items, 1-9 pick a choice, y/n answer a confirm, a approves
 * and d denies an approval; Tab reaches every control.
 */
export function Inbox({ session }: { session: Session }) {
  const { items, loaded, partial } = useInbox();
  const list = useRef<HTMLUListElement>(null);
  const canAnswer = may(session, "governanceRespond");

  const move = (event: KeyboardEvent) => {
    const cards = [...(list.current?.querySelectorAll<HTMLElement>("[data-item]") ?? [])];
    const at = cards.findIndex((card) => card.contains(document.activeElement));
    const typing = (event.target as HTMLElement).matches("input, textarea");
    if (typing) return;
    if (event.key === "ArrowDown" || event.key === "j") cards[Math.min(cards.length - 1, at + 1)]?.focus();
    else if (event.key === "ArrowUp" || event.key === "k") cards[Math.max(0, at - 1)]?.focus();
    else if (at >= 0) {
      const shortcut = cards[at]!.querySelector<HTMLButtonElement>(`[data-key="${CSS.escape(event.key)}"]`);
      if (!shortcut) return;
      shortcut.click();
    } else return;
    event.preventDefault();
  };

  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Inbox</h1>
      <p class="hint">
        {canAnswer ? "↑ ↓ (or j k) move, 1-9 pick a choice, y / n confirm, a approve, d deny." : "Your key's role may read the inbox but not answer: answers need an operator, coordinator or admin key."}
      </p>
      {partial && <p class="hint">More than 5000 open intents: the inbox shows what the first 5000 hold.</p>}
      {!loaded ? (
        <p aria-busy="true">Loading…</p>
      ) : items.length === 0 ? (
        <p class="empty">Nothing waits for you: no suspension awaits input and no approval is pending.</p>
      ) : (
        <ul class="inbox" ref={list} onKeyDown={move} aria-label="Items awaiting an answer">
          {items.map((item) => (
            <li key={item.key}>
              <Item item={item} session={session} canAnswer={canAnswer} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Item({ item, session, canAnswer }: { item: InboxItem; session: Session; canAnswer: boolean }) {
  const now = useNow();
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await action();
      inbox.drop(item.key);
      void inbox.refresh();
    } catch (error) {
      reportError(error);
    } finally {
      setBusy(false);
    }
  };
  const intentLink = (
    <a href={`#/intents/${item.intent.id}`} class="intent-link">
      {item.intent.title}
    </a>
  );

  if (item.kind === "approval") {
    const { approval } = item;
    const label = `Approval ${approval.action} on ${item.intent.title}`;
    return (
      <article class="card" tabIndex={0} data-item aria-label={label} aria-busy={busy}>
        <header>
          <span class="badge approval">approval</span> {intentLink} <span class="muted">requested by {approval.requested_by}, {ago(approval.created_at, now)}</span>
        </header>
        <p class="question">
          <strong>{approval.action}</strong>
          {approval.reason ? ` — ${approval.reason}` : ""}
        </p>
        {Object.keys(approval.context).length > 0 && <pre class="context">{JSON.stringify(approval.context, null, 2)}</pre>}
        {may(session, "governanceApprove") && (
          <div class="actions">
            <button class="primary" data-key="a" disabled={busy} onClick={() => run(() => session.client.ops.governanceApprove({ intent_id: item.intent.id, approval_id: approval.id, body: {} }))}>
              Approve
            </button>
            {may(session, "governanceDeny") && (
              <button class="danger" data-key="d" disabled={busy} onClick={() => run(() => session.client.ops.governanceDeny({ intent_id: item.intent.id, approval_id: approval.id, body: {} }))}>
                Deny
              </button>
            )}
          </div>
        )}
      </article>
    );
  }

  const { record } = item;
  const respond = (value: unknown) => run(() => session.client.ops.governanceRespond({ intent_id: item.intent.id, body: { suspension_id: record.id, value } }));
  const left = record.expires_at ? Date.parse(record.expires_at) - now : null;
  return (
    <article class="card" tabIndex={0} data-item aria-label={`Question on ${item.intent.title}: ${record.question}`} aria-busy={busy}>
      <header>
        <span class="badge suspension">question</span> {intentLink} <span class="muted">asked by {item.asker ?? "unknown"}, {ago(record.suspended_at, now)}</span>
        <span class={`time-left${left !== null && left < 60_000 ? " urgent" : ""}`}>{left === null ? "no timeout" : `${duration(left)} left`}</span>
      </header>
      <p class="question">{record.question}</p>
      {record.context && Object.keys(record.context).length > 0 && <pre class="context" aria-label="Context">{JSON.stringify(record.context, null, 2)}</pre>}
      {canAnswer && <Answer record={item.record} busy={busy} respond={respond} />}
    </article>
  );
}

export function Answer({ record, busy, respond }: { record: SuspensionRecord; busy: boolean; respond: (value: unknown) => void }) {
  const [text, setText] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const choices = record.choices?.length ? record.choices : record.response_type === "confirm" ? [{ value: "yes", label: "Yes" }, { value: "no", label: "No" }] : [];
  if (choices.length && (record.response_type === "choice" || record.response_type === "confirm")) {
    return (
      <div class="actions" role="group" aria-label="Choices">
        {choices.map((choice, index) => (
          <button key={choice.value} class={index === 0 ? "primary" : ""} disabled={busy} data-key={record.response_type === "confirm" && !record.choices?.length ? choice.value[0] : String(index + 1)} title={"description" in choice ? choice.description : undefined} onClick={() => respond(choice.value)}>
            {index < 9 && <kbd>{record.response_type === "confirm" && !record.choices?.length ? choice.value[0] : index + 1}</kbd>} {choice.label}
          </button>
        ))}
      </div>
    );
  }
  const form = record.response_type === "form";
  const submit = (event: Event) => {
    event.preventDefault();
    if (!form) return text.trim() ? respond(text) : setInvalid("Write an answer first.");
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
      setInvalid(null);
      respond(value);
    } catch {
      setInvalid("The answer must be a JSON object, for example {\"approved\": true}.");
    }
  };
  const id = `answer-${record.id}`;
  return (
    <form class="answer" onSubmit={submit}>
      <label for={id}>{form ? "Answer (a JSON object)" : "Answer"}</label>
      <textarea id={id} rows={form ? 4 : 2} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} aria-invalid={invalid !== null} aria-describedby={invalid ? `${id}-error` : undefined} />
      {invalid && (
        <p id={`${id}-error`} class="field-error" role="alert">
          {invalid}
        </p>
      )}
      <button class="primary" type="submit" disabled={busy}>
        Send answer
      </button>
    </form>
  );
}
