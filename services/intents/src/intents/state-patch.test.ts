import { describe, expect, it } from "vitest";
import { AppError, type JsonObject, type StatePatch } from "@intentmesh/contracts";
import { applyStatePatches, RESERVED_STATE_KEYS } from "./state-patch";
import { catchError } from "../../../../test/support/errors";


/** Asserts the patches fail with PATCH_FAILED 400 at `index`, and returns the error. */
function expectPatchFailure(state: JsonObject, patches: StatePatch[], index = 0): AppError {
  const error = catchError(() => applyStatePatches(state, patches));
  expect(error).toBeInstanceOf(AppError);
  const appError = error as AppError;
  expect(appError.code).toBe("PATCH_FAILED");
  expect(appError.status).toBe(400);
  expect(appError.details.index).toBe(index);
  return appError;
}

describe("applyStatePatches: set", () => {
  it("writes a top-level member and returns a new object", () => {
    const state = { a: 1 };
    const next = applyStatePatches(state, [{ op: "set", path: "/b", value: 2 }]);
    expect(next).toEqual({ a: 1, b: 2 });
    expect(state).toEqual({ a: 1 });
    expect(next).not.toBe(state);
  });

  it("overwrites an existing member", () => {
    expect(applyStatePatches({ a: 1 }, [{ op: "set", path: "/a", value: { x: true } }])).toEqual({ a: { x: true } });
  });

  it("creates missing parent objects", () => {
    expect(applyStatePatches({}, [{ op: "set", path: "/a/b/c", value: "deep" }])).toEqual({ a: { b: { c: "deep" } } });
  });

  it("accepts null as a value", () => {
    expect(applyStatePatches({ a: 1 }, [{ op: "set", path: "/a", value: null }])).toEqual({ a: null });
  });

  it("refuses set without a value", () => {
    expectPatchFailure({}, [{ op: "set", path: "/a" }]);
  });

  it("reads a path without a leading slash as the same path with one", () => {
    const state = { a: { b: 1 } };
    const withSlash = applyStatePatches(state, [{ op: "set", path: "/a/c", value: 2 }]);
    const without = applyStatePatches(state, [{ op: "set", path: "a/c", value: 2 }]);
    expect(without).toEqual(withSlash);
    expect(without).toEqual({ a: { b: 1, c: 2 } });
  });

  it("unescapes ~1: /a~1b sets the key a/b", () => {
    const next = applyStatePatches({}, [{ op: "set", path: "/a~1b", value: 1 }]);
    expect(next).toEqual({ "a/b": 1 });
    expect(next).not.toHaveProperty("a");
  });

  it("unescapes ~0: /m~0n sets the key m~n", () => {
    expect(applyStatePatches({}, [{ op: "set", path: "/m~0n", value: 1 }])).toEqual({ "m~n": 1 });
  });

  it("unescapes ~01 to the key ~1", () => {
    expect(applyStatePatches({}, [{ op: "set", path: "/~01", value: 1 }])).toEqual({ "~1": 1 });
  });

  it.each(["/a~2", "/a~", "/~x/b"])("fails on the invalid escape in %j", (path) => {
    const error = expectPatchFailure({}, [{ op: "set", path, value: 1 }]);
    expect(error.details.path).toBe(path);
  });

  it("replaces an array element by index", () => {
    expect(applyStatePatches({ l: [1, 2, 3] }, [{ op: "set", path: "/l/1", value: 9 }])).toEqual({ l: [1, 9, 3] });
  });

  it("appends to an array with '-' and with the index equal to its length", () => {
    expect(applyStatePatches({ l: [1] }, [{ op: "set", path: "/l/-", value: 2 }])).toEqual({ l: [1, 2] });
    expect(applyStatePatches({ l: [1] }, [{ op: "set", path: "/l/1", value: 2 }])).toEqual({ l: [1, 2] });
  });

  it("refuses an array index past the end, a leading zero and a non-numeric token", () => {
    expectPatchFailure({ l: [1] }, [{ op: "set", path: "/l/2", value: 2 }]);
    expectPatchFailure({ l: [1, 2] }, [{ op: "set", path: "/l/01", value: 2 }]);
    expectPatchFailure({ l: [1] }, [{ op: "set", path: "/l/x", value: 2 }]);
  });

  it("writes through an array element into an object", () => {
    expect(applyStatePatches({ l: [{ a: 1 }] }, [{ op: "set", path: "/l/0/b", value: 2 }])).toEqual({ l: [{ a: 1, b: 2 }] });
  });

  it("refuses to walk through a scalar", () => {
    expectPatchFailure({ a: 5 }, [{ op: "set", path: "/a/b", value: 1 }]);
  });

  it("does not alias the patch value into the result", () => {
    const value = { inner: [1] };
    const next = applyStatePatches({}, [{ op: "set", path: "/v", value }]);
    value.inner.push(2);
    expect(next).toEqual({ v: { inner: [1] } });
  });
});

describe("applyStatePatches: set on the whole state", () => {
  it("replaces the state when \"\" is set to an object", () => {
    const state = { a: 1, b: { c: 2 } };
    const next = applyStatePatches(state, [{ op: "set", path: "", value: { z: 26 } }]);
    expect(next).toEqual({ z: 26 });
    expect(state).toEqual({ a: 1, b: { c: 2 } });
  });

  it.each([[[1, 2]], ["text"], [3], [null]])("refuses to set the whole state to %j", (value) => {
    expectPatchFailure({ a: 1 }, [{ op: "set", path: "", value }]);
  });

  it("refuses append and remove on the whole state", () => {
    expectPatchFailure({ a: 1 }, [{ op: "append", path: "", value: 1 }]);
    expectPatchFailure({ a: 1 }, [{ op: "remove", path: "" }]);
  });
});

describe("applyStatePatches: append", () => {
  it("pushes onto an existing array", () => {
    expect(applyStatePatches({ l: [1] }, [{ op: "append", path: "/l", value: 2 }])).toEqual({ l: [1, 2] });
  });

  it("creates a missing array, and missing parents", () => {
    expect(applyStatePatches({}, [{ op: "append", path: "/l", value: "x" }])).toEqual({ l: ["x"] });
    expect(applyStatePatches({}, [{ op: "append", path: "/a/b", value: 1 }])).toEqual({ a: { b: [1] } });
  });

  it("appends an array value as one element", () => {
    expect(applyStatePatches({ l: [1] }, [{ op: "append", path: "/l", value: [2, 3] }])).toEqual({ l: [1, [2, 3]] });
  });

  it.each([[{ k: 1 }], ["str"], [0], [null]])("refuses to append to an existing non-array %j", (existing) => {
    const error = expectPatchFailure({ l: existing }, [{ op: "append", path: "/l", value: 2 }]);
    expect(error.details.op).toBe("append");
    expect(error.details.path).toBe("/l");
  });

  it("refuses append without a value", () => {
    expectPatchFailure({}, [{ op: "append", path: "/l" }]);
  });
});

describe("applyStatePatches: remove", () => {
  it("deletes an object member", () => {
    expect(applyStatePatches({ a: 1, b: 2 }, [{ op: "remove", path: "/a" }])).toEqual({ b: 2 });
  });

  it("deletes a nested member and an array element, shifting the rest", () => {
    expect(applyStatePatches({ a: { b: 1, c: 2 } }, [{ op: "remove", path: "/a/b" }])).toEqual({ a: { c: 2 } });
    expect(applyStatePatches({ l: [1, 2, 3] }, [{ op: "remove", path: "/l/0" }])).toEqual({ l: [2, 3] });
  });

  it("fails when the member is missing", () => {
    expectPatchFailure({ a: 1 }, [{ op: "remove", path: "/b" }]);
  });

  it("fails when a parent is missing, without creating it", () => {
    const state = {};
    expectPatchFailure(state, [{ op: "remove", path: "/x/y" }]);
    expect(state).toEqual({});
  });

  it("fails on an array index out of bounds and on '-'", () => {
    expectPatchFailure({ l: [1] }, [{ op: "remove", path: "/l/1" }]);
    expectPatchFailure({ l: [1] }, [{ op: "remove", path: "/l/-" }]);
  });

  it("does not treat an inherited property as a member", () => {
    expectPatchFailure({}, [{ op: "remove", path: "/toString" }]);
  });
});

describe("applyStatePatches: atomicity", () => {
  it("leaves the input unchanged and names index 1 when patch 2 of 3 fails", () => {
    const state: JsonObject = { a: 1, list: [1, 2], nested: { keep: true } };
    const before = structuredClone(state);
    const error = expectPatchFailure(
      state,
      [
        { op: "set", path: "/a", value: 100 },
        { op: "remove", path: "/missing" },
        { op: "append", path: "/list", value: 3 },
      ],
      1,
    );
    expect(state).toEqual(before);
    expect(error.details).toMatchObject({ index: 1, op: "remove", path: "/missing" });
    expect(typeof error.details.reason).toBe("string");
  });

  it("does not mutate nested objects of the input either", () => {
    const state: JsonObject = { nested: { list: [1] } };
    const before = structuredClone(state);
    expectPatchFailure(
      state,
      [
        { op: "append", path: "/nested/list", value: 2 },
        { op: "set", path: "/nested/list/x", value: 0 },
      ],
      1,
    );
    expect(state).toEqual(before);
  });

  it("applies patches in order, each seeing the previous", () => {
    const next = applyStatePatches({}, [
      { op: "set", path: "/a", value: [] },
      { op: "append", path: "/a", value: 1 },
      { op: "set", path: "/a/-", value: 2 },
      { op: "remove", path: "/a/0" },
    ]);
    expect(next).toEqual({ a: [2] });
  });
});

describe("applyStatePatches: reserved and dangerous keys", () => {
  it("reserves _suspension", () => {
    expect(RESERVED_STATE_KEYS).toContain("_suspension");
  });

  it.each<StatePatch>([
    { op: "set", path: "/_suspension", value: { id: "x" } },
    { op: "set", path: "_suspension", value: { id: "x" } },
    { op: "set", path: "/_suspension/status", value: "resolved" },
    { op: "append", path: "/_suspension", value: 1 },
    { op: "remove", path: "/_suspension" },
  ])("refuses to write _suspension through %j", (patch) => {
    const state: JsonObject = { _suspension: { id: "s1", status: "pending" } };
    expectPatchFailure(state, [patch]);
    expect(state).toEqual({ _suspension: { id: "s1", status: "pending" } });
  });

  it("allows a nested key named _suspension below another member", () => {
    expect(applyStatePatches({}, [{ op: "set", path: "/a/_suspension", value: 1 }])).toEqual({ a: { _suspension: 1 } });
  });

  it("refuses to write _suspension by setting the whole state", () => {
    expectPatchFailure({}, [{ op: "set", path: "", value: { _suspension: { id: "forged" } } }]);
  });

  it("does not drop an existing _suspension when the whole state is replaced", () => {
    const record = { id: "s1", status: "pending" };
    const state: JsonObject = { _suspension: record, a: 1 };
    let next: JsonObject | undefined;
    const error = catchError(() => {
      next = applyStatePatches(state, [{ op: "set", path: "", value: { b: 2 } }]);
    });
    if (error === undefined) {
      // Accepted: the server-owned record must survive the replacement.
      expect(next).toEqual({ _suspension: record, b: 2 });
    } else {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe("PATCH_FAILED");
    }
    expect(state).toEqual({ _suspension: record, a: 1 });
  });

  it.each<StatePatch>([
    { op: "set", path: "/__proto__", value: { polluted: true } },
    { op: "set", path: "/__proto__/polluted", value: true },
    { op: "set", path: "/a/__proto__", value: { polluted: true } },
    { op: "append", path: "/__proto__", value: 1 },
    { op: "remove", path: "/__proto__" },
  ])("refuses __proto__ in %j", (patch) => {
    const error = catchError(() => applyStatePatches({ a: {} }, [patch]));
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("PATCH_FAILED");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses a whole-state value with a __proto__ key (it would replace the state's prototype)", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as JsonObject;
    expect(Object.keys(value)).toContain("__proto__");
    expectPatchFailure({}, [{ op: "set", path: "", value }]);
  });

  it("writes constructor/prototype as own data, not into Object.prototype", () => {
    const next = applyStatePatches({}, [{ op: "set", path: "/constructor/prototype/polluted", value: true }]);
    expect(next).toEqual({ constructor: { prototype: { polluted: true } } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
