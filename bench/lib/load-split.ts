/** Where one autocannon goes, and with how many connections. */
export interface Slot {
  url: string;
  connections: number;
}

/** `connections` split evenly between the targets, the last taking the remainder; every target gets at least one. */
export function splitConnections(targets: readonly string[], connections: number): Slot[] {
  const per = Math.max(1, Math.floor(connections / targets.length));
  return targets.map((url, index) => ({ url, connections: index === targets.length - 1 ? Math.max(1, connections - per * (targets.length - 1)) : per }));
}

/**
 * The slots of each of `workers` load processes: every target's connections (splitConnections)
 * shared evenly among the processes, a target with fewer connections than processes going to the
 * first ones. No connection is added or lost in the sharing.
 */
export function slotsPerWorker(targets: readonly string[], connections: number, workers: number): Slot[][] {
  const perWorker: Slot[][] = Array.from({ length: workers }, () => []);
  const workerIds = Array.from({ length: workers }, (_, k) => String(k));
  for (const slot of splitConnections(targets, connections)) {
    splitConnections(workerIds, slot.connections).forEach((share, k) => {
      if (k < slot.connections) perWorker[k]!.push({ url: slot.url, connections: share.connections });
    });
  }
  return perWorker;
}
