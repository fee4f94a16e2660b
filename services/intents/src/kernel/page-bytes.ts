/** Bytes of JSON one list answer carries at most: it must fit in one bus message (1 MiB). */
export const MAX_PAGE_BYTES = 768 * 1024;

/** The first items whose JSON stays within `budget` bytes (at least one): a list pages by bytes as well as by count. */
export function withinPageBytes<T>(items: T[], budget = MAX_PAGE_BYTES): T[] {
  let bytes = 0;
  const out: T[] = [];
  for (const item of items) {
    bytes += Buffer.byteLength(JSON.stringify(item));
    if (out.length && bytes > budget) break;
    out.push(item);
  }
  return out;
}
