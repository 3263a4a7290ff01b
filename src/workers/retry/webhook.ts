// HTTP webhook delivery, signed the Standard Webhooks way (github.com/standard-webhooks).
// webhook-id is the dead letter's id, the same on every attempt, so receivers can de-duplicate
// (delivery is at-least-once: a crash after the POST and before the write re-sends it). An event
// requeued after it SUCCEEDED is a new message: its id gets the generation, `<id>.<generation>`.
import { createHmac } from 'node:crypto';
import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent, fetch, type Response } from 'undici';
import { isPrivateAddress, isPrivateHost } from '../../domain/targetAddress.ts';
import { parseRetryAfterMs } from '../../domain/retryPolicy.ts';
import { MAX_RESPONSE_SUMMARY_BYTES, truncate, type Deliver, type DeliveryResult } from './delivery.ts';

const MAX_REDIRECTS = 3;
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`; a `whsec_` prefix on the secret is base64. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** `<id>` for an event's first delivery generation, `<id>.<n>` after its n-th requeue from SUCCEEDED. */
export function webhookId(event: { id: bigint; deliveryGeneration: number }): string {
  return event.deliveryGeneration === 0 ? event.id.toString() : `${event.id}.${event.deliveryGeneration}`;
}

export interface WebhookOptions {
  /** Clock for webhook-timestamp and Retry-After dates; default Date.now. */
  nowMs?: () => number;
  /** Name resolution for targets; default node:dns lookup (the system resolver). */
  lookup?: typeof lookup;
}

/** One signed POST: what a dead letter's delivery and an alert's delivery have in common. */
export interface SignedPost {
  url: string;
  /** webhook-id: the same on every attempt of one message. */
  id: string;
  body: string;
  /** Standard Webhooks secret; null sends no webhook-signature. */
  secret: string | null;
  allowPrivateTarget: boolean;
  timeoutMs: number;
  permanentStatusCodes: readonly number[];
}

export type PostWebhook = (post: SignedPost, signal: AbortSignal) => Promise<DeliveryResult>;

export function createWebhookDeliver(options: WebhookOptions = {}): Deliver {
  const post = createWebhookPoster(options);
  return async (event, policy, signal) => {
    if (!policy.targetUrl) return failure('FAILED', 'no delivery target configured');
    const body = JSON.stringify({
      id: webhookId(event), type: event.eventType, queue: event.queue, source: event.source, orderingKey: event.orderingKey,
      attempt: event.attempts, occurredAt: event.occurredAt.toISOString(), headers: event.headers, payload: event.payload,
    });
    return post({
      url: policy.targetUrl, id: webhookId(event), body, secret: policy.signingSecret, allowPrivateTarget: policy.allowPrivateTarget,
      timeoutMs: policy.timeoutMs, permanentStatusCodes: policy.permanentStatusCodes,
    }, signal);
  };
}

/**
 * Signs and POSTs, following up to 3 redirects, with the SSRF checks on every hop and on every
 * address a name resolves to (unless allowPrivateTarget). Never throws: every failure is a result.
 */
export function createWebhookPoster(options: WebhookOptions = {}): PostWebhook {
  const nowMs = options.nowMs ?? Date.now;
  // Addresses are checked in the connection's own lookup, so the address checked is the address
  // connected to: no second resolution for a rebinding DNS server to answer differently.
  const publicOnly = new Agent({ connect: { lookup: lookupPublicOnly(options.lookup ?? lookup) } });
  return async (post, signal) => {
    const { id, body } = post;
    const timestamp = Math.floor(nowMs() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json', 'user-agent': 'lazarus-dlq', 'webhook-id': id, 'webhook-timestamp': String(timestamp),
    };
    if (post.secret) headers['webhook-signature'] = signWebhook(post.secret, id, timestamp, body);
    const timeout = AbortSignal.any([signal, AbortSignal.timeout(post.timeoutMs)]);
    let url = post.url;
    try {
      for (let hop = 0; ; hop++) {
        const { hostname } = new URL(url);
        if (!post.allowPrivateTarget && isPrivateHost(hostname)) {
          return failure('PERMANENT_FAILURE', `target ${hostname} is a private address and private targets are not allowed`);
        }
        const response = await fetch(url, {
          method: 'POST', headers, body, redirect: 'manual', signal: timeout,
          ...(!post.allowPrivateTarget && { dispatcher: publicOnly }),
        });
        const summary = await readSummary(response);
        const location = response.headers.get('location');
        if (response.status >= 300 && response.status < 400 && location) {
          if (hop >= MAX_REDIRECTS) return failure('FAILED', `too many redirects (last to ${location})`, response.status, summary);
          url = new URL(location, url).toString();
          if (!/^https?:$/.test(new URL(url).protocol)) return failure('PERMANENT_FAILURE', `redirect to a non-http(s) URL`, response.status, summary);
          continue;
        }
        return toResult(response, summary, post.permanentStatusCodes, nowMs());
      }
    } catch (error) {
      if (timeout.aborted && !signal.aborted) return failure('TIMED_OUT', `no response within ${post.timeoutMs} ms`);
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      if (cause instanceof PrivateAddressError) return failure('PERMANENT_FAILURE', cause.message);
      return failure('FAILED', cause?.code ?? cause?.message ?? (error as Error).message);
    }
  };
}

class PrivateAddressError extends Error {
  override name = 'PrivateAddressError';
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

function lookupPublicOnly(resolve: typeof lookup) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const inside = addresses.find((a) => isPrivateAddress(a.address));
      if (inside) return callback(new PrivateAddressError(`target ${hostname} resolves to private address ${inside.address}`), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

function toResult(response: Response, summary: string, permanentStatusCodes: readonly number[], now: number): DeliveryResult {
  const status = response.status;
  if (status >= 200 && status < 300) return { ok: true, statusCode: status, responseBody: summary || null };
  const retryAfterMs = RETRY_AFTER_STATUSES.has(status) ? parseRetryAfterMs(response.headers.get('retry-after'), now) : null;
  const isPermanent = permanentStatusCodes.includes(status);
  return { ...failure(isPermanent ? 'PERMANENT_FAILURE' : 'FAILED', `HTTP ${status}`, status, summary), retryAfterMs };
}

async function readSummary(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < MAX_RESPONSE_SUMMARY_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
  }
  await reader.cancel().catch(() => {});
  return truncate(Buffer.concat(chunks).toString('utf8'), MAX_RESPONSE_SUMMARY_BYTES);
}

function failure(outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT', errorMessage: string, statusCode: number | null = null, responseBody: string | null = null) {
  return { ok: false as const, outcome, errorMessage, statusCode, responseBody: responseBody || null, retryAfterMs: null };
}
