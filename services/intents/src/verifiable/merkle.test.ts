import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { merkleProof, merkleRoot, rootFromProof } from "./merkle";

const leaf = (n: number) => createHash("sha256").update(`event ${n}`).digest();
const h = (a: Buffer, b: Buffer) => createHash("sha256").update(Buffer.concat([a, b])).digest();

describe("the RFC 0019 Merkle tree", () => {
  it("is the leaf itself for one leaf, and a hash of the pair for two", () => {
    expect(merkleRoot([leaf(1)]).equals(leaf(1))).toBe(true);
    expect(merkleRoot([leaf(1), leaf(2)]).equals(h(leaf(1), leaf(2)))).toBe(true);
  });

  it("pads an odd count to a power of two by repeating the last leaf", () => {
    const [a, b, c] = [leaf(1), leaf(2), leaf(3)];
    expect(merkleRoot([a, b, c]).equals(h(h(a, b), h(c, c)))).toBe(true);
    const five = [1, 2, 3, 4, 5].map(leaf);
    const e = five[4]!;
    const expected = h(h(h(five[0]!, five[1]!), h(five[2]!, five[3]!)), h(h(e, e), h(e, e)));
    expect(merkleRoot(five).equals(expected)).toBe(true);
  });

  it("proves every leaf of trees of many sizes, and a proof fails for another leaf", () => {
    for (const size of [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 100]) {
      const leaves = Array.from({ length: size }, (_, i) => leaf(i));
      const root = merkleRoot(leaves);
      for (let i = 0; i < size; i++) {
        const proof = merkleProof(leaves, i);
        expect(proof.length).toBe(Math.ceil(Math.log2(size)));
        expect(rootFromProof(leaves[i]!, proof).equals(root)).toBe(true);
        expect(rootFromProof(leaf(1000), proof).equals(root)).toBe(false);
      }
    }
  });

  it("refuses an empty tree and a leaf outside it", () => {
    expect(() => merkleRoot([])).toThrow();
    expect(() => merkleProof([leaf(1)], 1)).toThrow(RangeError);
  });
});
