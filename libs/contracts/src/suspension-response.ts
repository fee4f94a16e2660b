import { appError, type AppError } from "./errors";
import type { SuspensionRecord } from "./suspension";

/** What a valid value adds to the answer: the label and description of the choice it matched. */
export interface MatchedChoice {
  choice_label?: string;
  choice_description?: string;
}

const CONFIRM_VALUES = ["yes", "no"];

function invalidValue(message: string, responseType: string, extra: Record<string, unknown> = {}, details: Record<string, unknown> = {}): AppError {
  return appError("INVALID_RESPONSE_VALUE", message, { response_type: responseType, ...details }, extra);
}

/**
 * An answer's value held to the waiting record (the intents service, under the intent's row lock,
 * when suspension.end asks it; the governance service reads the matched choice from the ended
 * record). Spec 2.9's table: choice -> one of the choices' values (422 with valid_choices, the accepted
 * values); confirm -> a choice's value when choices were given, else `yes` or `no`; text -> a
 * non-empty string; form -> anything, passed through.
 */
export function validateResponseValue(record: Pick<SuspensionRecord, "response_type" | "choices">, value: unknown): MatchedChoice {
  if (value === undefined) throw invalidValue("value is required", record.response_type);
  const choices = record.choices ?? [];
  switch (record.response_type) {
    case "choice":
    case "confirm": {
      const accepted = choices.length ? choices.map((c) => c.value) : record.response_type === "confirm" ? CONFIRM_VALUES : [];
      const match = typeof value === "string" ? choices.find((c) => c.value === value) : undefined;
      if (typeof value !== "string" || !accepted.includes(value)) {
        throw invalidValue(`value must be one of ${accepted.map((v) => JSON.stringify(v)).join(", ")}`, record.response_type, { valid_choices: accepted }, { choices });
      }
      return match ? { choice_label: match.label, ...(match.description !== undefined ? { choice_description: match.description } : {}) } : {};
    }
    case "text":
      if (typeof value !== "string" || value.trim() === "") throw invalidValue("a text response must be a non-empty string", "text");
      return {};
    default:
      return {};
  }
}
