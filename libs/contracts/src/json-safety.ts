import { appError } from "./errors";
import { AppError } from "./errors";

/**
 * What a JSON document may hold before any of it is stored: PostgreSQL refuses NUL in text and
 * jsonb (22021, 22P05) and lone UTF-16 surrogates cannot be encoded as UTF-8; a number that does
 * not read back as written (1e309 becomes null, -0 becomes 0, 9007199254740993 becomes ...992)
 * would be altered silently; and a deeply nested document overflows the stack of whatever walks
 * it recursively (zod, JSON.stringify, pg). Each is refused with a 400 naming where it is.
 */
export const MAX_JSON_DEPTH = 64;

export type UnsafeJsonProblem = "NUL_CHARACTER" | "LONE_SURROGATE" | "NUMBER_NOT_REPRESENTABLE" | "JSON_TOO_DEEP";

export interface UnsafeJsonValue {
  problem: UnsafeJsonProblem;
  /** JSON pointer to the value (or key) at fault; "" is the document itself. */
  path: string;
}

const SENTENCES: Record<UnsafeJsonProblem, string> = {
  NUL_CHARACTER: "holds a NUL character (\\u0000), which cannot be stored",
  LONE_SURROGATE: "holds a lone UTF-16 surrogate, which is not valid Unicode text",
  NUMBER_NOT_REPRESENTABLE: "holds a number that cannot be stored exactly as written (out of range, -0, or more precise than a 64-bit float)",
  JSON_TOO_DEEP: `is nested more than ${MAX_JSON_DEPTH} levels deep`,
};

/** The 400 for an unsafe value: its own code, the place in a sentence and in details. */
export function unsafeJsonError(found: UnsafeJsonValue, where = "the request"): AppError {
  const place = found.path ? `${where} at ${found.path}` : where;
  return new AppError(found.problem, `${place} ${SENTENCES[found.problem]}`, { path: found.path, problem: found.problem });
}

/** A string PostgreSQL and UTF-8 can hold as it is. */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function textProblem(text: string): UnsafeJsonProblem | null {
  if (text.includes("\u0000")) return "NUL_CHARACTER";
  if (!(text as unknown as { isWellFormed(): boolean }).isWellFormed()) return "LONE_SURROGATE";
  return null;
}

type Frame = { value: unknown; depth: number; parent: Frame | null; token: string };

const pointerOf = (frame: Frame | null): string => {
  const tokens: string[] = [];
  for (let f = frame; f?.parent; f = f.parent) tokens.push(f.token.replace(/~/g, "~0").replace(/\//g, "~1"));
  return tokens.reverse().map((t) => `/${t}`).join("");
};

/**
 * The first value of a parsed JSON document that cannot be stored unchanged, or null. Walks with
 * an explicit stack, so no nesting depth can overflow it; keys are checked like values.
 */
export function findUnsafeJsonValue(document: unknown, maxDepth = MAX_JSON_DEPTH): UnsafeJsonValue | null {
  const stack: Frame[] = [{ value: document, depth: 0, parent: null, token: "" }];
  while (stack.length) {
    const frame = stack.pop()!;
    const { value } = frame;
    if (typeof value === "string") {
      const problem = textProblem(value);
      if (problem) return { problem, path: pointerOf(frame) };
    } else if (typeof value === "number") {
      if (!Number.isFinite(value) || Object.is(value, -0)) return { problem: "NUMBER_NOT_REPRESENTABLE", path: pointerOf(frame) };
    } else if (value !== null && typeof value === "object") {
      if (frame.depth >= maxDepth) return { problem: "JSON_TOO_DEEP", path: pointerOf(frame) };
      if (Array.isArray(value)) {
        for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], depth: frame.depth + 1, parent: frame, token: String(i) });
      } else {
        for (const [key, child] of Object.entries(value)) {
          const problem = textProblem(key);
          if (problem) return { problem, path: pointerOf({ value: key, depth: frame.depth + 1, parent: frame, token: key }) };
          stack.push({ value: child, depth: frame.depth + 1, parent: frame, token: key });
        }
      }
    }
  }
  return null;
}

/**
 * A decimal literal reduced to sign, significant digits and exponent, so "1.50e1", "15" and
 * "15.0" compare equal: the literal and the shortest form of the double it parses to must agree.
 */
function decimalKey(literal: string): string {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!match) return `invalid:${literal}`;
  const [, sign, whole = "", fraction = "", exponent = "0"] = match;
  let digits = whole + fraction;
  let power = Number(exponent) - fraction.length;
  const leading = digits.search(/[1-9]/);
  if (leading === -1) return `${sign}0`;
  digits = digits.slice(leading);
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  return `${sign}${digits}e${power}`;
}

/** Whether a JSON number literal reads back exactly as written once parsed into a double. */
export function numberLiteralIsExact(literal: string): boolean {
  const parsed = Number(literal);
  if (!Number.isFinite(parsed)) return false;
  if (parsed === 0) return !literal.startsWith("-") && decimalKey(literal) === "0";
  return decimalKey(literal) === decimalKey(String(parsed));
}

/**
 * Finds the first number literal of a JSON text (valid JSON: JSON.parse accepted it) that does
 * not read back unchanged. Strings are skipped, so digits inside them are not numbers.
 */
export function findInexactNumber(text: string): string | null {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let end = i + 1;
      while (end < text.length && /[0-9eE.+-]/.test(text[end]!)) end++;
      const literal = text.slice(i, end);
      // Small integers are by far the most common numbers; they are always exact.
      if (!(literal.length < 16 && /^-?[1-9]\d*$|^0$/.test(literal)) && !numberLiteralIsExact(literal)) return literal;
      i = end - 1;
    }
  }
  return null;
}

/**
 * Parses a request body: JSON.parse, then every number literal must be exact, then every string
 * and key storable and the nesting bounded. Any failure is a 400 with its own code.
 */
export function parseJsonStrict(text: string, where = "the request body"): unknown {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw appError("INVALID_JSON", `${where} is not valid JSON`);
  }
  const inexact = findInexactNumber(text);
  if (inexact !== null) {
    throw appError("NUMBER_NOT_REPRESENTABLE", `${where} holds the number ${inexact.slice(0, 40)}, which cannot be stored exactly as written (out of range, -0, or more precise than a 64-bit float)`,
      { literal: inexact.slice(0, 100) },
    );
  }
  const unsafe = findUnsafeJsonValue(document);
  if (unsafe) throw unsafeJsonError(unsafe, where);
  return document;
}
