import { canonicalJson, sha256Tag } from "@intentmesh/contracts";

/**
 * The RFC 0019 hash chain as the writers of the intent log extend it (docs/verifiable-logs.md).
 * The head of an intent's chain lives on its row (chain_seq, chain_head, chain_previous): the
 * hot statements hash a new event from it in the UPDATE that takes the sequence, the transaction
 * path hashes in JavaScript after taking the row lock. Either way the link is made under the lock
 * that assigns the sequence, so concurrent writers and replicas extend one chain.
 */

/**
 * An event's canonical JSON (RFC 8785) split around the two fields a statement learns only when it
 * takes the row lock: `before + <previous_event_hash as JSON> + ',"sequence":' + <sequence> + after`.
 * `content` is the event without sequence and its hash fields. Canonical JSON sorts keys, and no
 * event field sorts between previous_event_hash and sequence, so the two sit side by side.
 * `payload` is the canonical JSON of the event's payload, as it appears in `before`: the one
 * serialisation of it the writer makes (the hot statements store it, serve it and hash it).
 */
export function canonicalAroundChain(content: Record<string, unknown>): { before: string; after: string; payload: string | undefined } {
  const keys = Object.keys(content).sort();
  // One pass, no closures: this runs for every event a hot statement writes.
  let head = "";
  let tail = "";
  let payload: string | undefined;
  for (const key of keys) {
    const value = content[key];
    if (value === undefined) continue;
    if (key >= "previous_event_hash" && key <= "sequence") {
      throw new Error(`event fields ${keys.filter((k) => content[k] !== undefined).join(", ")}: one sorts between previous_event_hash and sequence, or is one of them`);
    }
    const text = canonicalJson(value);
    if (key === "payload") payload = text;
    if (key < "previous_event_hash") head += `${JSON.stringify(key)}:${text},`;
    else tail += `,${JSON.stringify(key)}:${text}`;
  }
  return { before: `{${head}"previous_event_hash":`, after: `${tail}}`, payload };
}

/**
 * SQL of the canonical JSON of the event a statement writes at `sequenceSql`, linked to
 * `previousSql`, from the parts it was given as parameters (canonicalAroundChain; `afterOpenParam`
 * is its `after` without the closing brace), left open: without its closing brace.
 */
const openCanonicalSql = (beforeParam: string, previousSql: string, sequenceSql: string, afterOpenParam: string) =>
  `${beforeParam}::text || coalesce('"' || ${previousSql} || '"', 'null') || ',"sequence":' || ${sequenceSql} || ${afterOpenParam}::text`;

/**
 * SQL of the hash of the event a statement writes at `sequenceSql`, linked to `previousSql`, from
 * the canonical parts it was given as parameters (canonicalAroundChain, `after` without its
 * closing brace). Built-in sha256 and string concatenation only: no function call that plans a
 * query, no lookup.
 */
export function chainHashSql(beforeParam: string, previousSql: string, sequenceSql: string, afterOpenParam: string): string {
  const canonical = `${openCanonicalSql(beforeParam, previousSql, sequenceSql, afterOpenParam)} || '}'`;
  return `'sha256:' || rtrim(translate(encode(sha256(convert_to(${canonical}, 'UTF8')), 'base64'), '+/', '-_'), '=')`;
}

/**
 * SQL of the served wire form of that event: its canonical JSON (the text hashed) with event_hash
 * added last. A client verifies it by dropping event_hash and canonicalising, whatever the order.
 */
export const canonicalWireSql = (beforeParam: string, previousSql: string, sequenceSql: string, afterOpenParam: string, hashSql: string) =>
  `${openCanonicalSql(beforeParam, previousSql, sequenceSql, afterOpenParam)} || ',"event_hash":"' || ${hashSql} || '"}'`;

/** The same served wire form in JavaScript, for the answer of the statement that wrote it. */
export const canonicalWire = (before: string, previous: string | null, sequence: number, afterOpen: string, hash: string) =>
  `${before}${previous === null ? "null" : `"${previous}"`},"sequence":${sequence}${afterOpen},"event_hash":"${hash}"}`;

/**
 * SQL of the previous event's hash for a statement that takes the next sequence of an intent row
 * (`row` is the table alias): the row's chain head when it is current, else the stored event
 * before (intents.chain_link, which reads under the lock and refuses a hole). Used in the UPDATE's
 * SET, which PostgreSQL evaluates again on the newest row version when it had to wait for the lock.
 */
export const previousHashSql = (row: string) =>
  `(case when ${row}.chain_seq = ${row}.event_seq then ${row}.chain_head else intents.chain_link(${row}.id, ${row}.event_seq) end)`;

/**
 * The SET clauses that move an intent row's chain head to the event the same UPDATE logs at
 * event_seq + 1. All right-hand sides read the row before the update, so chain_previous is the
 * old head and chain_head is hashed from it; RETURNING then reads both.
 */
export const advanceChainSql = (row: string, beforeParam: string, afterOpenParam: string) =>
  `chain_previous = ${previousHashSql(row)},
   chain_head = ${chainHashSql(beforeParam, previousHashSql(row), `(${row}.event_seq + 1)`, afterOpenParam)},
   chain_seq = ${row}.event_seq + 1`;

/** The event hash in JavaScript: canonical JSON of the event as served, without event_hash. */
export function chainHash(event: Record<string, unknown>, previous: string | null): string {
  const { event_hash: _ignored, ...content } = event;
  return sha256Tag(canonicalJson({ ...content, previous_event_hash: previous }));
}
