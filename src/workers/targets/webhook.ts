// The webhook target kind: an HTTP POST signed the Standard Webhooks way (github.com/standard-webhooks).
// webhook-id is the event's delivery id (targetKind.ts), the same on every attempt, so receivers can
// de-duplicate (delivery is at-least-once: a crash after the POST and before the write re-sends it).
// An event requeued after it SUCCEEDED is a new message: its id gets the generation, `<id>.<generation>`.
import { createHash, createHmac } from 'node:crypto';
import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent, fetch, type Response } from 'undici';
import { z } from 'zod';
import { isPrivateAddress, isPrivateHost, targetUrlProblem } from '../../domain/targetAddress.ts';
import { parseRetryAfterMs } from '../../domain/retryPolicy.ts';
import { MAX_RESPONSE_SUMMARY_BYTES, truncate, type Deliver, type DeliveryRequest, type DeliveryResponse, type DeliveryResult } from '../retry/delivery.ts';
import { createTargetDeliver, deliveryId, failure, kindMap, type TargetKind } from './targetKind.ts';

const MAX_REDIRECTS = 3;
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/** `v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`; a `whsec_` prefix on the secret is base64. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
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

// The secret comes first so that its problem is the one reported when both are wrong (a secret
// given alone, to a policy without a URL, is told about the secret). Its length is a rule for new
// secrets only, as it was before kinds: a stored shorter one still signs.
const WebhookSettings = z.strictObject({ secret: z.string().optional(), url: z.string() });
const WebhookInput = z.strictObject({
  secret: z.string().min(16, 'secret must be 16–500 characters').max(500, 'secret must be 16–500 characters').optional(),
  url: z.string(),
});
type WebhookSettings = z.infer<typeof WebhookSettings>;

/** The webhook kind; options replace the clock and the resolver in tests. */
export function createWebhookTarget(options: WebhookOptions = {}): TargetKind<WebhookSettings> {
  const post = createWebhookPoster(options);
  return {
    kind: 'webhook',
    label: 'Webhook (HTTP POST)',
    fields: [
      { name: 'url', label: 'Webhook URL', isRequired: true, placeholder: 'https://…' },
      { name: 'secret', label: 'Signing secret', isSecret: true, placeholder: 'whsec_… (16–500 characters)' },
    ],
    settings: WebhookSettings,
    input: WebhookInput,
    reasons: { url: 'INVALID_URL', secret: 'INVALID_SECRET' },
    check: (settings, { allowPrivateTarget }) => {
      const problem = targetUrlProblem(settings.url, allowPrivateTarget);
      return problem && { field: 'url', ...problem };
    },
    // A URL's path and query can be the secret (Slack's are): only the host is shown.
    describe: (settings) => `webhook to ${URL.parse(settings.url)?.host ?? 'an unparsable URL'}${settings.secret ? ', signed' : ''}`,
    publicSettings: (settings) => ({ url: settings.url }),
    deliver: (event, settings, policy, signal) => {
      const id = deliveryId(event);
      const envelope = JSON.stringify({
        id, type: event.eventType, queue: event.queue, source: event.source, orderingKey: event.orderingKey,
        attempt: event.attempts, occurredAt: event.occurredAt.toISOString(), headers: event.headers,
      });
      // The payload last, as its stored JSON text: a number JavaScript cannot carry goes out exactly.
      const body = `${envelope.slice(0, -1)},"payload":${event.payloadJson}}`;
      return post({
        url: settings.url, id, body, secret: settings.secret ?? null, allowPrivateTarget: policy.allowPrivateTarget,
        timeoutMs: policy.timeoutMs, permanentStatusCodes: policy.permanentStatusCodes,
      }, signal);
    },
  };
}

/** Delivers every event by webhook (the policy's target must be a webhook): for tests and tools. */
export function createWebhookDeliver(options: WebhookOptions = {}): Deliver {
  return createTargetDeliver(kindMap([createWebhookTarget(options)]));
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
    // The signature is in it: the attempt's writer redacts it (domain/attemptDetails.ts).
    const request: DeliveryRequest = {
      target: `webhook to ${new URL(post.url).host}`, headers, bodyBytes: Buffer.byteLength(body),
      bodySha256: createHash('sha256').update(body).digest('hex'),
    };
    const timeout = AbortSignal.any([signal, AbortSignal.timeout(post.timeoutMs)]);
    let url = post.url;
    try {
      for (let hop = 0; ; hop++) {
        const { hostname, host } = new URL(url);
        if (hop > 0) request.target = `webhook to ${new URL(post.url).host}, redirected to ${host}`;
        if (!post.allowPrivateTarget && isPrivateHost(hostname)) {
          return failure('PERMANENT_FAILURE', `target ${hostname} is a private address and private targets are not allowed`, { kind: 'INVALID_TARGET', request });
        }
        const response = await fetch(url, {
          method: 'POST', headers, body, redirect: 'manual', signal: timeout,
          ...(!post.allowPrivateTarget && { dispatcher: publicOnly }),
        });
        const { summary, isTruncated } = await readSummary(response);
        const answered = { statusCode: response.status, responseBody: summary, request, response: responseDetails(response, isTruncated) };
        const location = response.headers.get('location');
        if (response.status >= 300 && response.status < 400 && location) {
          if (hop >= MAX_REDIRECTS) return failure('FAILED', `too many redirects (last to ${location})`, { kind: 'REJECTED', ...answered });
          url = new URL(location, url).toString();
          if (!/^https?:$/.test(new URL(url).protocol)) return failure('PERMANENT_FAILURE', `redirect to a non-http(s) URL`, { kind: 'REJECTED', ...answered });
          continue;
        }
        return toResult(response, answered, post.permanentStatusCodes, nowMs());
      }
    } catch (error) {
      // The caller's signal aborts with a TimeoutError at the policy's timeout too (runRetryPass).
      if (timeout.aborted && (!signal.aborted || (signal.reason as Error | undefined)?.name === 'TimeoutError')) {
        return failure('TIMED_OUT', `no response within ${post.timeoutMs} ms`, { kind: 'TIMEOUT', request });
      }
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      if (cause instanceof PrivateAddressError) return failure('PERMANENT_FAILURE', cause.message, { kind: 'INVALID_TARGET', request });
      return failure('FAILED', cause?.code ?? cause?.message ?? (error as Error).message, { kind: 'UNREACHABLE', request });
    }
  };
}

/** A name that resolves to a private address, refused by `lookupPublicOnly`. */
export class PrivateAddressError extends Error {
  override name = 'PrivateAddressError';
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** A connection's name lookup that refuses every private address (SSRF); shared by the network kinds. */
export function lookupPublicOnly(resolve: typeof lookup = lookup) {
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

interface Answered {
  statusCode: number;
  responseBody: string;
  request: DeliveryRequest;
  response: DeliveryResponse;
}

function toResult(response: Response, answered: Answered, permanentStatusCodes: readonly number[], now: number): DeliveryResult {
  const status = response.status;
  if (status >= 200 && status < 300) return { ok: true, ...answered, responseBody: answered.responseBody || null };
  const retryAfterMs = RETRY_AFTER_STATUSES.has(status) ? parseRetryAfterMs(response.headers.get('retry-after'), now) : null;
  const isPermanent = permanentStatusCodes.includes(status);
  return { ...failure(isPermanent ? 'PERMANENT_FAILURE' : 'FAILED', `HTTP ${status}`, { kind: 'REJECTED', rule: 'PERMANENT_STATUS_CODE', ...answered }), retryAfterMs };
}

function responseDetails(response: Response, isTruncated: boolean): DeliveryResponse {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  });
  return { headers, bodyTruncated: isTruncated };
}

/** The body's first 2 KB, and whether there was more (one chunk past the cap is read to know). */
async function readSummary(response: Response): Promise<{ summary: string; isTruncated: boolean }> {
  if (!response.body) return { summary: '', isTruncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size <= MAX_RESPONSE_SUMMARY_BYTES) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
  }
  await reader.cancel().catch(() => {});
  return { summary: truncate(Buffer.concat(chunks).toString('utf8'), MAX_RESPONSE_SUMMARY_BYTES), isTruncated: size > MAX_RESPONSE_SUMMARY_BYTES };
}
