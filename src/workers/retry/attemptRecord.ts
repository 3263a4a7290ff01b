// What an attempt's row keeps of a delivery's result: every field bounded, secrets redacted, for
// whatever kind produced it (domain/attemptDetails.ts has the caps).
import {
  boundHeaders, cutText, MAX_REQUEST_HEADERS_BYTES, MAX_RESPONSE_HEADERS_BYTES, MAX_TARGET_BYTES,
} from '../../domain/attemptDetails.ts';
import { MAX_RESPONSE_SUMMARY_BYTES, truncate, type DeliveryResult, type PermanentRule } from './delivery.ts';

export interface AttemptDetails {
  responseBody: string | null;
  target: string | null;
  requestHeaders: Record<string, string> | null;
  requestBodyBytes: number | null;
  requestBodySha256: string | null;
  responseHeaders: Record<string, string> | null;
  responseBodyTruncated: boolean | null;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export function attemptDetails(result: DeliveryResult): AttemptDetails {
  const { request, response } = result;
  const body = result.responseBody === null ? null : truncate(result.responseBody, MAX_RESPONSE_SUMMARY_BYTES);
  const isBodyCut = body !== null && body !== result.responseBody;
  const bodyBytes = request && Number.isSafeInteger(request.bodyBytes) && request.bodyBytes >= 0 ? Math.min(request.bodyBytes, 2_147_483_647) : null;
  return {
    responseBody: body || null,
    target: request?.target ? cutText(request.target, MAX_TARGET_BYTES) : null,
    requestHeaders: request ? boundHeaders(request.headers, MAX_REQUEST_HEADERS_BYTES) : null,
    requestBodyBytes: bodyBytes,
    requestBodySha256: bodyBytes !== null && request?.bodySha256 && SHA256_HEX.test(request.bodySha256) ? request.bodySha256 : null,
    responseHeaders: response ? boundHeaders(response.headers, MAX_RESPONSE_HEADERS_BYTES) : null,
    responseBodyTruncated: response || isBodyCut ? Boolean(response?.bodyTruncated) || isBodyCut : null,
  };
}

/** The rule that made a failure permanent; null when it was not (the writer may still find MAX_ATTEMPTS). */
export function permanentRuleOf(result: Extract<DeliveryResult, { ok: false }>): PermanentRule | null {
  if (result.outcome !== 'PERMANENT_FAILURE') return null;
  return result.permanentRule ?? (result.failureKind === 'INVALID_TARGET' ? 'INVALID_TARGET' : 'PERMANENT_ERROR');
}
