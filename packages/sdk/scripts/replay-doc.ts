import { routes } from "../src/generated/routes";
import { replaySafety, type ReplaySafety } from "../src/replay";
import type { RouteSpec } from "../src/route-spec";

export const REPLAY_BEGIN = "<!-- BEGIN GENERATED: replay classes (pnpm sdk:generate) -->";
export const REPLAY_END = "<!-- END GENERATED: replay classes -->";

const TITLES: Record<ReplaySafety, string> = {
  read: "Reads: replayed freely",
  keyed: "Keyed: replayed with the same Idempotency-Key; the server answers the first outcome",
  conditional: "Conditional (If-Match required, the version moves): replayed with the same If-Match; cannot apply twice",
  idempotent: "Idempotent (PUT, DELETE of one resource): replayed; a second application changes nothing",
  unsafe: "Never replayed after the request may have left (a lost answer is OUTCOME_UNKNOWN)",
};

/** docs/sdk.md's table of which operation the SDK may send again, from the same rule the client applies. */
export function renderReplaySection(): string {
  const byClass = new Map<ReplaySafety, string[]>();
  for (const [operationId, route] of Object.entries(routes) as [string, RouteSpec][]) {
    const safety = replaySafety(route, route.ifMatch === "required");
    byClass.set(safety, [...(byClass.get(safety) ?? []), `\`${operationId}\` (${route.method} ${route.path})`]);
  }
  const lines = [REPLAY_BEGIN, ""];
  for (const safety of ["read", "keyed", "conditional", "idempotent", "unsafe"] as const) {
    const entries = byClass.get(safety) ?? [];
    lines.push(`**${TITLES[safety]}** (${entries.length}):`, "", ...entries.map((entry) => `- ${entry}`), "");
  }
  lines.push(REPLAY_END);
  return lines.join("\n");
}

export function injectReplaySection(document: string): string {
  const begin = document.indexOf(REPLAY_BEGIN);
  const end = document.indexOf(REPLAY_END);
  if (begin < 0 || end < 0) throw new Error("docs/sdk.md has no generated replay section markers");
  return `${document.slice(0, begin)}${renderReplaySection()}${document.slice(end + REPLAY_END.length)}`;
}
