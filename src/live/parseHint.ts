// Any role can NOTIFY any channel, so a hint is untrusted input: it only wakes the feed up and
// is never forwarded. Anything that is not the trigger's exact shape is rejected, never thrown.

export interface ChangeHint {
  table: (typeof TABLES)[number];
  /** Highest change_id in the statement that sent the hint. */
  maxChangeId: bigint;
}

const TABLES = ['dead_letters', 'delivery_attempts', 'dead_letter_tombstones', 'error_groups'] as const;
const MAX_PAYLOAD_CHARS = 8_000;

/** Parses a NOTIFY payload; returns null for garbage (never throws). */
export function parseHint(raw: string): ChangeHint | null {
  if (typeof raw !== 'string' || raw.length > MAX_PAYLOAD_CHARS) return null;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { t, max } = value as { t?: unknown; max?: unknown };
  if (!TABLES.includes(t as ChangeHint['table'])) return null;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) return null;
  return { table: t as ChangeHint['table'], maxChangeId: BigInt(max) };
}
