import { jsonBytes } from "@intentmesh/contracts";

/**
 * Splits an archive snapshot (3.7: namespace, key, value, tags of every working entry) into parts
 * of at most maxBytes of JSON each, in order, so each memory.archived event fits in a bus
 * message. An item larger than maxBytes makes a part of its own (values are at most 64 KiB).
 */
export function splitSnapshot<T>(items: T[], maxBytes: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const bytes = jsonBytes(item) + 1;
    if (current.length && size + bytes > maxBytes) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += bytes;
  }
  if (current.length) out.push(current);
  return out;
}
