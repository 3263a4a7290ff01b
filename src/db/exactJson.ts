// JSON numbers that a double cannot carry: 12345678901234567890 parses to 12345678901234567000, and
// 0.1000000000000000055511151231257827 to 0.1. PostgreSQL's jsonb keeps them exactly, so whatever
// reads JSON into JavaScript on its way to or from the table must either keep them or refuse them.

/**
 * Whether the number `value`, parsed from JSON `source`, is the number `source` says: whether the
 * shortest text of the double (what JSON.stringify prints) has the same decimal value. A ratio
 * such as 0.9837133550488599 (16 digits) comes back as it went; 12345678901234567890 does not.
 */
export function isExactNumber(source: string, value: number): boolean {
  if (!Number.isFinite(value)) return false;
  const a = decimalOf(source);
  const b = decimalOf(String(value));
  return a !== undefined && b !== undefined && a.negative === b.negative && a.digits === b.digits && a.exponent === b.exponent;
}

// A decimal as sign, significant digits and the power of ten of the last one; zero has no digits.
function decimalOf(text: string): { negative: boolean; digits: string; exponent: number } | undefined {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return undefined;
  const fraction = m[3] ?? '';
  const all = (m[2]! + fraction).replace(/^0+/, '');
  const digits = all.replace(/0+$/, '');
  if (digits === '') return { negative: false, digits: '', exponent: 0 };
  return { negative: m[1] === '-', digits, exponent: Number(m[4] ?? 0) - fraction.length + (all.length - digits.length) };
}

// Text that may hold such a number: where a JSON value can start (the text's start, or after `:`, `,`
// or `[`), 16 digits in a row (a decimal point among them allowed) or a number with an exponent.
// Anything else parses as plain JSON.parse would, without a reviver, which is ~10× faster: a hex id
// in a string ("3e4f…") does not count.
const MAYBE_INEXACT = /(?:^|[:,[])\s*-?(?:\d(?:\.?\d){15}|\d+(?:\.\d+)?[eE])/;

const { rawJSON: rawJson, isRawJSON } = JSON as unknown as { rawJSON(text: string): unknown; isRawJSON(value: unknown): boolean };

// `value`, parsed from `source`, where a double carries it, else `source` kept as it is.
const kept = (source: string, value: number): unknown => (isExactNumber(source, value) ? value : rawJson(source));

/** The JSON number `source` as a number where a double carries it, else kept as its text. */
export const numberKeptExact = (source: string): unknown => kept(source, Number(source));

/** A number parseJsonKeepingNumbers kept as its text: a leaf of the document, though an object to JavaScript. */
export const isKeptNumber = (value: unknown): boolean => isRawJSON(value);

/**
 * JSON.parse, keeping each number a double cannot carry as its source text (a JSON.rawJSON value),
 * which JSON.stringify prints back as it came: for bodies stored as they arrived (the bridges,
 * GraphQL requests) and json read from the table (runSql).
 */
export function parseJsonKeepingNumbers(text: string): unknown {
  if (!MAYBE_INEXACT.test(text)) return JSON.parse(text);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? kept(context.source, value) : value);
}
