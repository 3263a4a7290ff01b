// Any role can NOTIFY any channel, so a hint is untrusted input: it only wakes the feed up and
// is never forwarded. Anything that is not the trigger's exact shape is rejected, never thrown.

export interface ChangeHint {
  table: 'dead_letters' | 'delivery_attempts' | 'dead_letter_tombstones';
  /** Highest change_id in the statement that sent the hint. */
  maxChangeId: bigint;
}

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
  if (t !== 'dead_letters' && t !== 'delivery_attempts' && t !== 'dead_letter_tombstones') return null;
  if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) return null;
  return { table: t, maxChangeId: BigInt(max) };
}
