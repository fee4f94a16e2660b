import { describe, expect, it } from "vitest";
import type { AppError } from "./errors";
import { validateResponseValue } from "./suspension-response";

const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as AppError;
  }
  throw new Error("accepted");
};

describe("response values (spec 2.9 table)", () => {
  const choices = [{ value: "a", label: "A", description: "first" }, { value: "b", label: "B" }];
  it("choice: a choice's value, with its label and description; otherwise 422 with valid_choices", () => {
    expect(validateResponseValue({ response_type: "choice", choices }, "a")).toEqual({ choice_label: "A", choice_description: "first" });
    expect(validateResponseValue({ response_type: "choice", choices }, "b")).toEqual({ choice_label: "B" });
    const error = refused(() => validateResponseValue({ response_type: "choice", choices }, "c"));
    expect(error.status).toBe(422);
    expect(error.extra.valid_choices).toEqual(["a", "b"]);
    expect(refused(() => validateResponseValue({ response_type: "choice", choices }, ["a"])).status).toBe(422);
  });
  it("confirm: yes/no without choices, the choices when given", () => {
    expect(validateResponseValue({ response_type: "confirm" }, "yes")).toEqual({});
    expect(refused(() => validateResponseValue({ response_type: "confirm" }, true)).extra.valid_choices).toEqual(["yes", "no"]);
    expect(validateResponseValue({ response_type: "confirm", choices }, "a")).toMatchObject({ choice_label: "A" });
  });
  it("text: non-empty string; form: anything but nothing", () => {
    expect(refused(() => validateResponseValue({ response_type: "text" }, "")).status).toBe(422);
    expect(validateResponseValue({ response_type: "text" }, "ok")).toEqual({});
    expect(validateResponseValue({ response_type: "form" }, { x: 1 })).toEqual({});
    expect(refused(() => validateResponseValue({ response_type: "form" }, undefined)).status).toBe(422);
  });
});
