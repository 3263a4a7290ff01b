// What a delivery returns, and the seam between the loop and the ways to deliver (webhook or
// in-process handler). A delivery never throws: every failure is an outcome.
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';

export type DeliveryResult =
  | { ok: true; statusCode: number | null; responseBody: string | null }
  | {
      ok: false;
      outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT';
      errorMessage: string;
      statusCode: number | null;
      responseBody: string | null;
      /** The target asked to wait this long (Retry-After), already capped. */
      retryAfterMs: number | null;
    };

export type Deliver = (event: ClaimedDeadLetter, policy: RetryPolicy, signal: AbortSignal) => Promise<DeliveryResult>;

/** An in-process handler: resolve to succeed, throw to fail (a PermanentDeliveryError is not retried). */
export type DeadLetterHandler = (event: ClaimedDeadLetter, signal: AbortSignal) => Promise<void>;

/** Thrown by a handler when retrying cannot help (the event is invalid for this consumer). */
export class PermanentDeliveryError extends Error {
  override name = 'PermanentDeliveryError';
}

export const MAX_RESPONSE_SUMMARY_BYTES = 2048;

/** Runs a registered handler for the event's type, else `fallback` (the webhook). */
export function createDeliver(handlers: ReadonlyMap<string, DeadLetterHandler>, fallback: Deliver): Deliver {
  return async (event, policy, signal) => {
    const handler = handlers.get(event.eventType);
    if (!handler) return fallback(event, policy, signal);
    try {
      await handler(event, signal);
      return { ok: true, statusCode: null, responseBody: null };
    } catch (error) {
      const isPermanent = error instanceof PermanentDeliveryError ||
        (policy.permanentErrorKinds as string[]).includes((error as { kind?: string })?.kind ?? '');
      return {
        ok: false,
        outcome: signal.aborted ? 'TIMED_OUT' : isPermanent ? 'PERMANENT_FAILURE' : 'FAILED',
        errorMessage: truncate(error instanceof Error ? error.message : String(error), MAX_RESPONSE_SUMMARY_BYTES),
        statusCode: null,
        responseBody: null,
        retryAfterMs: null,
      };
    }
  };
}

export function truncate(text: string, maxBytes: number): string {
  // PostgreSQL text cannot hold NUL, and a target may answer with anything.
  const bytes = Buffer.from(text.replaceAll('\u0000', ''), 'utf8');
  if (bytes.length <= maxBytes) return bytes.toString('utf8');
  // Cutting inside a multi-byte character decodes to U+FFFD (3 bytes): trim until it fits.
  let cut = bytes.subarray(0, maxBytes).toString('utf8');
  while (Buffer.byteLength(cut) > maxBytes) cut = cut.slice(0, -1);
  return cut;
}
