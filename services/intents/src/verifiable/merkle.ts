import { hash } from "node:crypto";

/**
 * The Merkle tree of RFC 0019 3.4: leaves are the 32-byte digests of the batch's event hashes in
 * sequence order, padded to a power of two by repeating the last leaf, and each parent is
 * SHA-256(left || right) of its children's raw digests (what the Python client's
 * MerkleProof.verify() recomputes). No domain separation between leaves and nodes, as the RFC
 * and the client define it; a checkpoint signs its event_count and sequence range, which pins the
 * number of real leaves (docs/verifiable-logs.md, "Limits").
 */

export type ProofStep = { hash: Buffer; position: "left" | "right" };

const parent = (left: Buffer, right: Buffer): Buffer => hash("sha256", Buffer.concat([left, right], 64), "buffer");

function padded(leaves: readonly Buffer[]): Buffer[] {
  if (!leaves.length) throw new Error("a Merkle tree needs at least one leaf");
  let size = 1;
  while (size < leaves.length) size *= 2;
  const level = [...leaves];
  while (level.length < size) level.push(leaves[leaves.length - 1]!);
  return level;
}

function up(level: readonly Buffer[]): Buffer[] {
  const next: Buffer[] = [];
  for (let i = 0; i < level.length; i += 2) next.push(parent(level[i]!, level[i + 1]!));
  return next;
}

export function merkleRoot(leaves: readonly Buffer[]): Buffer {
  let level = padded(leaves);
  while (level.length > 1) level = up(level);
  return level[0]!;
}

/** The sibling of the leaf at `index` on each level, bottom up, and on which side it sits. */
export function merkleProof(leaves: readonly Buffer[], index: number): ProofStep[] {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) throw new RangeError(`leaf ${index} is not in a tree of ${leaves.length}`);
  let level = padded(leaves);
  let at = index;
  const steps: ProofStep[] = [];
  while (level.length > 1) {
    const sibling = at ^ 1;
    steps.push({ hash: level[sibling]!, position: sibling < at ? "left" : "right" });
    level = up(level);
    at >>= 1;
  }
  return steps;
}

/** RFC 0019 4.2: the root a leaf and its proof lead to. */
export function rootFromProof(leaf: Buffer, steps: readonly ProofStep[]): Buffer {
  return steps.reduce((current, step) => (step.position === "left" ? parent(step.hash, current) : parent(current, step.hash)), leaf);
}
