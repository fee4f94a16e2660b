/**
 * Lists of names treated as sets: sorted and without duplicates, so that two sets with the same
 * members are equal as values (composition results can be compared with deep equality).
 */
export type NameSet = readonly string[];

export function toNameSet(names: Iterable<string>): NameSet {
  return [...new Set(names)].sort();
}

export function intersect(a: NameSet, b: NameSet): NameSet {
  const other = new Set(b);
  return toNameSet(a.filter((name) => other.has(name)));
}

export function union(a: NameSet, b: NameSet): NameSet {
  return toNameSet([...a, ...b]);
}

export function isSubset(inner: NameSet, outer: NameSet): boolean {
  const members = new Set(outer);
  return inner.every((name) => members.has(name));
}
