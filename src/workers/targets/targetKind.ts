// What a delivery target kind provides, and the Deliver that dispatches on a policy's kind. The write
// path half (parse, check, describe) is domain/retryTarget.ts; a kind adds `deliver`. The settings
// are parsed again before each delivery, with the same parser the save used, so a row written
// around the API (psql) is refused as data, never sent half-understood.
import { createHash } from 'node:crypto';
import type { ClaimedDeadLetter } from '../../db/sql/claimDueDeadLetters.ts';
import { parseTargetSettings, type TargetKindSpec } from '../../domain/retryTarget.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';
import type { Deliver, DeliveryFailureKind, DeliveryRequest, DeliveryResponse, DeliveryResult, PermanentRule } from '../retry/delivery.ts';
import type { ResolveSource } from './sourceTarget.ts';

export interface TargetKind<S = any> extends TargetKindSpec<S> {
  /**
   * Sends one event. Never throws: every failure is a result (FAILED is retried, PERMANENT_FAILURE
   * is not). The message id to give the broker is `deliveryId(event)`, the same on every attempt.
   */
  deliver(event: ClaimedDeadLetter, settings: S, policy: RetryPolicy, signal: AbortSignal): Promise<DeliveryResult>;
  /**
   * For kinds that hold connections (a broker's, shared by every policy with the same server and
   * credentials): the state of each one, for /metrics, GraphQL and the console. `target` is the
   * kind's `describe` line, never a credential.
   */
  health?(): TargetHealth[];
  /** Closes every connection the kind holds; the next delivery opens them again. */
  close?(): Promise<void>;
}

export interface TargetHealth {
  kind: string;
  /** Host (and vhost, for AMQP) only: never a user name, password or token. */
  target: string;
  state: 'CONNECTED' | 'CONNECTING' | 'DISCONNECTED';
  /** The last connection or publish error, with when it happened; null once connected again. */
  lastError: string | null;
  lastErrorAt: Date | null;
}

export type TargetKinds = ReadonlyMap<string, TargetKind>;

export function kindMap(kinds: readonly TargetKind[]): TargetKinds {
  return new Map(kinds.map((k) => [k.kind, k]));
}

/** `<id>` for an event's first delivery generation, `<id>.<n>` after its n-th requeue from SUCCEEDED. */
export function deliveryId(event: { id: bigint; deliveryGeneration: number }): string {
  return event.deliveryGeneration === 0 ? event.id.toString() : `${event.id}.${event.deliveryGeneration}`;
}

/**
 * An attempt's request as a broker kind sent it: `target` is the kind's `describe` line, `headers`
 * the properties and headers put on the message (values as text; the attempt's writer redacts and
 * caps them), and the body's size and SHA-256.
 */
export function brokerRequest(target: string, headers: Readonly<Record<string, unknown>>, body: string | Buffer): DeliveryRequest {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && value !== null) text[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return { target, headers: text, bodyBytes: Buffer.byteLength(body), bodySha256: createHash('sha256').update(body).digest('hex') };
}

/**
 * `compute` once per object it is given (by identity, held weakly): a claim's policy, or the settings
 * parsed from it, are shared by all the claim's events of that type.
 */
export function oncePerObject<K extends object, V>(compute: (key: K) => V): (key: K) => V {
  const computed = new WeakMap<K, V>();
  return (key) => {
    if (computed.has(key)) return computed.get(key)!;
    const value = compute(key);
    computed.set(key, value);
    return value;
  };
}

/**
 * Delivers each event through its policy's target kind, or, for an event requeued to its source,
 * through the kind its origin names (sourceTarget.ts) with the policy's timeout, retries and backoff.
 */
export function createTargetDeliver(kinds: TargetKinds, options: { resolveSource?: ResolveSource } = {}): Deliver {
  // A claim hands every event of a type the one policy object it read, so the settings are parsed
  // once per type and claim, not once per event (a redrive of 100 events to RabbitMQ parsed them 100 times).
  const settingsOf = oncePerObject((policy: RetryPolicy) =>
    parseTargetSettings(kinds.get(policy.targetKind!)!, policy.targetSettings, { allowPrivateTarget: policy.allowPrivateTarget }));
  return async (event, policy, signal) => {
    if (event.isToSource) return deliverToSource(kinds, options.resolveSource, event, policy, signal);
    if (policy.targetKind === null) return failure('FAILED', 'no delivery target configured', { kind: 'INVALID_TARGET' });
    const kind = kinds.get(policy.targetKind);
    // Retried, not refused: a newer process that knows the kind may take the next attempt.
    if (!kind) return failure('FAILED', `target kind "${policy.targetKind}" is not known to this process`, { kind: 'INVALID_TARGET' });
    const parsed = settingsOf(policy);
    if (!parsed.ok) return failure('PERMANENT_FAILURE', `${policy.targetKind} target: ${parsed.problem.field}: ${parsed.problem.message}`, { kind: 'INVALID_TARGET' });
    return kind.deliver(event, parsed.settings, policy, signal);
  };
}

async function deliverToSource(
  kinds: TargetKinds, resolveSource: ResolveSource | undefined, event: ClaimedDeadLetter, policy: RetryPolicy, signal: AbortSignal,
): Promise<DeliveryResult> {
  // Retried, not refused: declaring the bridge (or a redirect) lets a later attempt through.
  if (!resolveSource) return failure('FAILED', 'redrive to source: no broker bridge is declared in this process', { kind: 'INVALID_TARGET' });
  const resolved = await resolveSource(event.origin);
  if (!resolved.ok) return failure('FAILED', `redrive to source: ${resolved.problem}`, { kind: 'INVALID_TARGET' });
  const { target } = resolved;
  const kind = kinds.get(target.kind);
  if (!kind) return failure('FAILED', `target kind "${target.kind}" is not known to this process`, { kind: 'INVALID_TARGET' });
  // The broker is a declared bridge's: the operator's own, private addresses included.
  const parsed = parseTargetSettings(kind, target.settings, { allowPrivateTarget: true });
  if (!parsed.ok) return failure('PERMANENT_FAILURE', `redrive to source: ${target.kind}: ${parsed.problem.field}: ${parsed.problem.message}`, { kind: 'INVALID_TARGET' });
  return kind.deliver(event, parsed.settings, { ...policy, allowPrivateTarget: true }, signal);
}

export interface FailureDetails {
  kind?: DeliveryFailureKind;
  /** For PERMANENT_FAILURE: which rule (default PERMANENT_ERROR, or INVALID_TARGET for that kind). */
  rule?: PermanentRule;
  statusCode?: number | null;
  responseBody?: string | null;
  request?: DeliveryRequest | null;
  response?: DeliveryResponse | null;
}

export function failure(outcome: 'FAILED' | 'PERMANENT_FAILURE' | 'TIMED_OUT', errorMessage: string, details: FailureDetails = {}) {
  const { kind = null, statusCode = null, responseBody = null, request = null, response = null } = details;
  const permanentRule = outcome !== 'PERMANENT_FAILURE' ? null : details.rule ?? (kind === 'INVALID_TARGET' ? 'INVALID_TARGET' : 'PERMANENT_ERROR');
  return {
    ok: false as const, outcome, errorMessage, statusCode, responseBody: responseBody || null, retryAfterMs: null,
    failureKind: kind, permanentRule, request, response,
  };
}

/** Every kind's connection health, for /metrics, GraphQL and the console. */
export function targetHealth(kinds: TargetKinds): TargetHealth[] {
  return [...kinds.values()].flatMap((k) => k.health?.() ?? []);
}

/** Closes the connections of every kind that holds some (service shutdown). */
export async function closeTargetKinds(kinds: TargetKinds): Promise<void> {
  await Promise.all([...kinds.values()].map((k) => k.close?.()));
}
