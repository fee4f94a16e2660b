import { appError } from "@intentmesh/contracts";
import { type JsonObject, type StatePatch } from "@intentmesh/contracts";
import { parsePointer, PointerError } from "../kernel/json-pointer";

type Json = unknown;
type Container = Record<string, Json> | Json[];

/**
 * Applies a list of patches to a copy of the state, all or nothing. A failing patch throws
 * PATCH_FAILED (400) naming its index, op and path; the input state is never modified.
 *
 * - set: writes value at path, creating missing parent objects; in an array, an index or `-` (end).
 * - append: pushes value onto the array at path, creating the array when the path is absent.
 * - remove: deletes the member or array element at path; it must exist.
 * Reserved keys the server manages (`_suspension`) cannot be written through patches.
 */
export function applyStatePatches(state: JsonObject, patches: StatePatch[], reservedKeys: readonly string[] = RESERVED_STATE_KEYS): JsonObject {
  const next = structuredClone(state) as JsonObject;
  patches.forEach((patch, index) => {
    try {
      applyOne(next, patch, reservedKeys);
    } catch (error) {
      if (!(error instanceof PatchError || error instanceof PointerError)) throw error;
      throw appError("PATCH_FAILED", `patch ${index} (${patch.op} ${patch.path}) cannot apply: ${error.message}`, {
        index,
        op: patch.op,
        path: patch.path,
        reason: error.message,
      });
    }
  });
  return next;
}

/** State keys the server owns: `_suspension` holds the active suspension record (spec 2.1). */
export const RESERVED_STATE_KEYS = ["_suspension"] as const;

class PatchError extends Error {}

function applyOne(root: JsonObject, patch: StatePatch, reservedKeys: readonly string[]): void {
  const tokens = parsePointer(patch.path);
  if (tokens.length === 0) return replaceWholeState(root, patch, reservedKeys);
  if (reservedKeys.includes(tokens[0]!)) throw new PatchError(`${tokens[0]} is managed by the server`);
  if (patch.op !== "remove" && patch.value === undefined) throw new PatchError(`${patch.op} needs a value`);
  const value = structuredClone(patch.value);
  const parentTokens = tokens.slice(0, -1);
  const last = tokens[tokens.length - 1]!;
  const parent = patch.op === "remove" ? walk(root, parentTokens, false) : walk(root, parentTokens, true);

  switch (patch.op) {
    case "set":
      return setMember(parent, last, value);
    case "append": {
      const existing = getMember(parent, last);
      if (existing === undefined) return setMember(parent, last, [value]);
      if (!Array.isArray(existing)) throw new PatchError("the target exists and is not an array");
      existing.push(value);
      return;
    }
    case "remove":
      return removeMember(parent, last);
  }
}

/**
 * `set ""` replaces the whole state, except the keys the server manages: those are kept as they
 * are, and a new value may not bring its own.
 */
function replaceWholeState(root: JsonObject, patch: StatePatch, reservedKeys: readonly string[]): void {
  if (patch.op !== "set") throw new PatchError("only set may target the whole state");
  if (!isPlainObject(patch.value)) throw new PatchError("the whole state must be set to a JSON object");
  const value = structuredClone(patch.value);
  for (const key of Object.keys(value)) {
    if (key === "__proto__") throw new PatchError("__proto__ is not a valid key");
    if (reservedKeys.includes(key)) throw new PatchError(`${key} is managed by the server`);
  }
  for (const key of Object.keys(root)) if (!reservedKeys.includes(key)) delete root[key];
  for (const [key, member] of Object.entries(value)) root[key] = member;
}

function walk(root: Container, tokens: string[], create: boolean): Container {
  let node: Container = root;
  for (const token of tokens) {
    let child = getMember(node, token);
    if (child === undefined) {
      if (!create) throw new PatchError(`${token} does not exist`);
      child = {};
      setMember(node, token, child);
    }
    if (!isContainer(child)) throw new PatchError(`${token} is not an object or array`);
    node = child;
  }
  return node;
}

function arrayIndex(array: Json[], token: string, forInsert: boolean): number {
  if (token === "-" && forInsert) return array.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new PatchError(`${token} is not an array index`);
  const index = Number(token);
  const max = forInsert ? array.length : array.length - 1;
  if (index > max) throw new PatchError(`index ${index} is out of bounds (length ${array.length})`);
  return index;
}

function getMember(node: Container, token: string): Json {
  if (Array.isArray(node)) {
    if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
    return node[Number(token)];
  }
  return Object.prototype.hasOwnProperty.call(node, token) ? node[token] : undefined;
}

function setMember(node: Container, token: string, value: Json): void {
  if (Array.isArray(node)) {
    const index = arrayIndex(node, token, true);
    if (index === node.length) node.push(value);
    else node[index] = value;
    return;
  }
  if (token === "__proto__") throw new PatchError("__proto__ is not a valid key");
  node[token] = value;
}

function removeMember(node: Container, token: string): void {
  if (Array.isArray(node)) {
    node.splice(arrayIndex(node, token, false), 1);
    return;
  }
  if (!Object.prototype.hasOwnProperty.call(node, token)) throw new PatchError(`${token} does not exist`);
  delete node[token];
}

const isPlainObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);
const isContainer = (v: unknown): v is Container => typeof v === "object" && v !== null;
