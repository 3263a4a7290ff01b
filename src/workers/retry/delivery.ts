// What a delivery returns, and the seam between the loop and the ways to deliver (the policy's
// target kind, src/workers/targets, or an in-process handler). A delivery never throws: every failure is an outcome.
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';

/**
 * Why a delivery failed, beside its outcome: UNREACHABLE when the target could not be reached at all
 * (connection refused, DNS, a broker that is down: nothing was handed over), REJECTED when it was
 * reached and said no (an HTTP error status, a broker's nack or a refused publish), TIMEOUT when it
 * did not answer in time, INVALID_TARGET when the policy's target cannot be used (bad settings, a
 * private host, a kind this process does not know).
 */
export type DeliveryFailureKind = 'UNREACHABLE' | 'REJECTED' | 'TIMEOUT' | 'INVALID_TARGET';

/**
 * Which rule made a failure permanent: the target's status is one of the policy's permanent status
 * codes, the handler's error kind one of its permanent error kinds, the handler or kind said retrying
 * cannot help (PermanentDeliveryError, a redirect to a non-http URL), or the target cannot be used.
 * MAX_ATTEMPTS (the event ran out of attempts) is decided where the outcome is written.
 */
export type PermanentRule = 'PERMANENT_STATUS_CODE' | 'PERMANENT_ERROR_KIND' | 'PERMANENT_ERROR' | 'INVALID_TARGET';

/**
 * What was sent, as the kind describes it: `target` is host and kind only (the kind's `describe`),
 * never a URL's path or a credential. Headers may hold secrets here: they are redacted, like every
 * field capped, before the attempt is written (domain/attemptDetails.ts).
 */
export interface DeliveryRequest {
  target: string;
  headers: Record<string, string>;
  bodyBytes: number;
  /** Hex SHA-256 of the body sent. */
  bodySha256?: string | null;
}

/** What came back beside the status and body excerpt. */
export interface DeliveryResponse {
  headers: Record<string, string>;
  /** The body was longer than the excerpt kept in `responseBody`. */
  bodyTruncated?: boolean;
}

/** Present on both outcomes; a kind fills what it knows (null or absent when nothing was sent). */
interface DeliveryDetails {
  request?: DeliveryRequest | null;
  response?: DeliveryResponse | null;
}

export type DeliveryResult =
  | ({ ok: true; statusCode: number | null; responseBody: string | null } & DeliveryDetails)
  | ({
      ok: false;
      outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT';
      errorMessage: string;
      statusCode: number | null;
      responseBody: string | null;
      /** The target asked to wait this long (Retry-After), already capped. */
      retryAfterMs: number | null;
      /** Null when unknown (an in-process handler's throw). */
      failureKind?: DeliveryFailureKind | null;
      /** For PERMANENT_FAILURE: the rule; absent means PERMANENT_ERROR (INVALID_TARGET for that failure kind). */
      permanentRule?: PermanentRule | null;
    } & DeliveryDetails);

export type Deliver = (event: ClaimedDeadLetter, policy: RetryPolicy, signal: AbortSignal) => Promise<DeliveryResult>;

/** An in-process handler: resolve to succeed, throw to fail (a PermanentDeliveryError is not retried). */
export type DeadLetterHandler = (event: ClaimedDeadLetter, signal: AbortSignal) => Promise<void>;

/** Thrown by a handler when retrying cannot help (the event is invalid for this consumer). */
export class PermanentDeliveryError extends Error {
  override name = 'PermanentDeliveryError';
}

export const MAX_RESPONSE_SUMMARY_BYTES = 2048;

/** Runs a registered handler for the event's type, else `fallback` (the policy's target). */
export function createDeliver(handlers: ReadonlyMap<string, DeadLetterHandler>, fallback: Deliver): Deliver {
  return async (event, policy, signal) => {
    // An event requeued to its source goes there, not to the type's handler.
    const handler = event.isToSource ? undefined : handlers.get(event.eventType);
    if (!handler) return fallback(event, policy, signal);
    try {
      await handler(event, signal);
      return { ok: true, statusCode: null, responseBody: null };
    } catch (error) {
      const permanentRule = error instanceof PermanentDeliveryError ? 'PERMANENT_ERROR'
        : (policy.permanentErrorKinds as string[]).includes((error as { kind?: string })?.kind ?? '') ? 'PERMANENT_ERROR_KIND' : null;
      return {
        ok: false,
        outcome: signal.aborted ? 'TIMED_OUT' : permanentRule ? 'PERMANENT_FAILURE' : 'FAILED',
        failureKind: signal.aborted ? 'TIMEOUT' : null,
        permanentRule: signal.aborted ? null : permanentRule,
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
