import { useEffect, useState } from "preact/hooks";
import { IntentmeshError, intentEventTypes, type Intentmesh, type ResponseOf } from "@intentmesh/sdk";
import { isDown, onHealthChange, reportError, reportOk } from "./health";
import { mapLimit } from "./util";

export type Intent = ResponseOf<"intentsGet">;
export type Approval = ResponseOf<"governanceGetApproval">;

export interface SuspensionRecord {
  id: string;
  question: string;
  response_type: "choice" | "confirm" | "text" | "form";
  choices?: { value: string; label: string; description?: string }[];
  context?: Record<string, unknown>;
  suspended_at: string;
  expires_at: string | null;
  resolution?: string;
}

export type InboxItem =
  | { kind: "suspension"; key: string; intent: Intent; record: SuspensionRecord; asker: string | null }
  | { kind: "approval"; key: string; intent: Intent; approval: Approval };

/** Intents that may hold pending approvals: every one not yet completed or abandoned. */
const OPEN_STATUSES = "draft,active,blocked,suspended_awaiting_input";
/**
 * The inbox follows GET /subscribe/inbox and reads again on each hint; this slow read is the net
 * under it, for a hint lost while the stream reconnected.
 */
export const INBOX_SAFETY_READ_MS = 30_000;
/** While the server does not answer (the banner), the inbox reads this often, so the banner goes soon after it answers again. */
const OUTAGE_READ_MS = 2000;
/** Hints that arrive together (a burst of suspensions) make one read. */
const HINT_COALESCE_MS = 150;
/** The most intents one read follows pages to (500 a page); beyond it the inbox says it is partial. */
const MAX_INTENTS = 5000;

/** Every intent of these statuses, page after page, up to MAX_INTENTS. */
export async function listAll(client: Intentmesh, status: string): Promise<{ intents: Intent[]; partial: boolean }> {
  const intents: Intent[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.ops.intentsList({ query: { status, limit: 500, ...(after ? { after } : {}) } });
    intents.push(...page.intents);
    if (!page.has_more || !page.next_cursor) return { intents, partial: false };
    if (intents.length >= MAX_INTENTS) return { intents, partial: true };
    after = page.next_cursor;
  }
}

/**
 * The inbox: every suspension awaiting input and every pending approval the operator may read.
 * It follows the inbox stream (one connection, hints about intents whose waiting items changed)
 * and reads the lists again on each hint, on each (re)connection of the stream, at once after an
 * answer, and every INBOX_SAFETY_READ_MS whatever happens (docs/console.md).
 */
class InboxStore {
  items: InboxItem[] = [];
  loaded = false;
  /** More intents than one read follows: some items may be missing. */
  partial = false;
  private client: Intentmesh | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private hinted: ReturnType<typeof setTimeout> | undefined;
  private stream: AbortController | null = null;
  private running: Promise<void> | null = null;
  /** A read was asked while one ran: what it read may be older than the hint, so one more follows. */
  private again = false;
  private readonly askers = new Map<string, string | null>();
  private readonly listeners = new Set<() => void>();

  private unwatchHealth: (() => void) | null = null;

  start(client: Intentmesh): void {
    this.stop();
    this.client = client;
    void this.refresh();
    this.follow(client);
    // Any call that found the server down (this store's or a page's) brings the next read forward.
    this.unwatchHealth = onHealthChange(() => {
      if (isDown() && this.client && !this.running) this.schedule(OUTAGE_READ_MS);
    });
  }

  stop(): void {
    this.unwatchHealth?.();
    this.unwatchHealth = null;
    clearTimeout(this.timer);
    clearTimeout(this.hinted);
    this.stream?.abort();
    this.stream = null;
    this.client = null;
    this.items = [];
    this.loaded = false;
    this.notify();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Reads the inbox now (after an answer, a hint, a reconnection, or on the safety read). */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.read().finally(() => {
      this.running = null;
      clearTimeout(this.timer);
      if (!this.client) return;
      if (this.again) {
        this.again = false;
        void this.refresh();
      } else this.schedule(isDown() ? OUTAGE_READ_MS : INBOX_SAFETY_READ_MS);
    });
    return this.running;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), ms);
  }

  /** Follows the inbox stream until stop(); the SDK reconnects it by itself, and each connection reads the inbox again. */
  private follow(client: Intentmesh): void {
    const controller = new AbortController();
    this.stream = controller;
    const onHint = () => {
      clearTimeout(this.hinted);
      this.hinted = setTimeout(() => void this.refresh(), HINT_COALESCE_MS);
    };
    void (async () => {
      let connections = 0;
      try {
        // The first connection follows the first read (start); every later one may have missed hints.
        const stream = client.subscribeInbox({
          signal: controller.signal,
          // Reconnect within 5 s of the server's return: the reconnection is what takes the banner away.
          reconnect: { maxDelayMs: 5000 },
          onConnect: () => {
            reportOk();
            if (connections++ > 0) onHint();
          },
          // A lost stream is the server not answering (the banner), whatever error the browser gave.
          onDisconnect: (error) => reportError(error instanceof IntentmeshError ? error : new IntentmeshError("NETWORK_ERROR", "the inbox stream was lost", 0)),
        });
        for await (const _hint of stream) onHint();
      } catch {
        // Refused (a role without the inbox): the safety read still keeps the list.
      }
    })();
  }

  /** Takes an answered item away at once, before the next read confirms it. */
  drop(key: string): void {
    this.items = this.items.filter((item) => item.key !== key);
    this.notify();
  }

  private async read(): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      const [suspended, open] = await Promise.all([listAll(client, "suspended_awaiting_input"), listAll(client, OPEN_STATUSES)]);
      const suspensions = await mapLimit(suspended.intents, 4, async (intent): Promise<InboxItem | null> => {
        const record = intent.state._suspension as SuspensionRecord | undefined;
        if (!record || typeof record !== "object" || record.resolution) return null;
        return { kind: "suspension", key: `s:${record.id}`, intent, record, asker: await this.askerOf(client, intent.id, record.id) };
      });
      const approvals = await mapLimit(open.intents, 4, async (intent) => {
        const page = await client.ops.governanceListApprovals({ intent_id: intent.id, query: { status: "pending" } });
        return page.approvals.map((approval): InboxItem => ({ kind: "approval", key: `a:${approval.id}`, intent, approval }));
      });
      if (this.client !== client) return;
      const waiting = (item: InboxItem) => (item.kind === "suspension" ? (item.record.expires_at ?? "9999") : "9999" + item.approval.created_at);
      this.items = [...suspensions.filter((item): item is InboxItem => item !== null), ...approvals.flat()].sort((a, b) => waiting(a).localeCompare(waiting(b)));
      this.loaded = true;
      this.partial = suspended.partial || open.partial;
      reportOk();
      this.notify();
    } catch (error) {
      reportError(error);
    }
  }

  /** The agent that asked: the actor of the intent's last intent.suspended event (read once per suspension). */
  private async askerOf(client: Intentmesh, intentId: string, suspensionId: string): Promise<string | null> {
    if (this.askers.has(suspensionId)) return this.askers.get(suspensionId)!;
    const page = await client.ops.intentsListEvents({ intent_id: intentId, query: { event_type: intentEventTypes.suspended, tail: "true", limit: 1 } });
    const asker = page.events[0]?.actor ?? null;
    this.askers.set(suspensionId, asker);
    return asker;
  }

  private notify(): void {
    this.listeners.forEach((listener) => listener());
  }
}

export const inbox = new InboxStore();

export function useInbox(): { items: InboxItem[]; loaded: boolean; partial: boolean } {
  const [, setTick] = useState(0);
  useEffect(() => inbox.subscribe(() => setTick((n) => n + 1)), []);
  return { items: inbox.items, loaded: inbox.loaded, partial: inbox.partial };
}
