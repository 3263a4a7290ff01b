// A typed producer client for Node (fetch only, no dependencies):
//
//   const lazarus = new LazarusClient({ url: 'http://lazarus:4000/graphql', apiKey: process.env.LAZARUS_KEY });
//   await lazarus.deadLetter({ eventType: 'order.placed', payload, error: err, dedupeKey: `orders-${partition}-${offset}` });
//
// Retries: network errors, timeouts, HTTP 429 and 5xx are retried with capped exponential backoff
// and full jitter. That is safe because ingest is idempotent on the dedupe key: when the caller
// gives none, the client generates a random one per event *before* the first attempt, so a retry
// after a lost response is stored once. For such generated keys a "duplicate" answer can only be
// our own earlier attempt, so it is reported as created. Expected failures (validation, auth)
// are thrown as LazarusError at once, never retried.
import { randomUUID } from 'node:crypto';
import { parseJsonKeepingNumbers } from '../db/exactJson.ts';

export type ErrorKind = 'DOWNSTREAM_API' | 'TIMEOUT' | 'VALIDATION' | 'SCHEMA_MISMATCH' | 'CRASH' | 'UNKNOWN';

export interface DeadLetterInput {
  eventType: string;
  /** Any JSON, at most 256 KiB. */
  payload: unknown;
  /** The failure: a thrown Error (message and stack are taken from it) or its parts. */
  error?: Error | { kind?: ErrorKind; message?: string; stack?: string };
  /** Error kind when `error` is an Error. Default UNKNOWN. */
  errorKind?: ErrorKind;
  queue?: string;
  source?: string;
  orderingKey?: string;
  orderingSeq?: bigint | number | string;
  /** Transport metadata (topic, partition, offset, trace ids): a JSON object. */
  headers?: Record<string, unknown>;
  occurredAt?: Date;
  dedupeKey?: string;
  maxAttempts?: number;
  firstRetryAt?: Date;
}

export interface RecordedDeadLetter {
  id: string;
  /** False when an event with the same (caller-given) dedupe key was already stored. */
  created: boolean;
  dedupeKey: string;
}

export interface LazarusClientOptions {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql */
  url: string;
  /** Bearer token of an operator (or admin) key. */
  apiKey?: string;
  /** Retries after the first attempt. Default 5. */
  retries?: number;
  /** First backoff; doubles per retry, with full jitter. Default 200 ms. */
  minBackoffMs?: number;
  /** Backoff cap. Default 5000 ms. */
  maxBackoffMs?: number;
  /** Per-request timeout. Default 10000 ms. */
  timeoutMs?: number;
  /** Events per request in deadLetterMany (at most 1000). Default 500. */
  batchSize?: number;
  fetch?: typeof fetch;
}

/**
 * An expected failure: code is VALIDATION, NOT_FOUND, CONFLICT, UNAUTHENTICATED, FORBIDDEN,
 * BAD_USER_INPUT or HTTP_<status>; UNAVAILABLE when retries gave up (cause: the last error).
 */
export class LazarusError extends Error {
  override name = 'LazarusError';
  readonly code: string;
  readonly field: string | null;
  /** For deadLetterMany: the position of the offending event in the caller's array. */
  readonly index: number | null;
  constructor(code: string, message: string, details: { field?: string | null; index?: number | null; cause?: unknown } = {}) {
    super(message, { cause: details.cause });
    this.code = code;
    this.field = details.field ?? null;
    this.index = details.index ?? null;
  }
}

const MUTATION = `mutation LazarusClientRecord($inputs: [RecordDeadLetterInput!]!) {
  recordDeadLetters(inputs: $inputs) {
    __typename
    ... on RecordedDeadLetters { results { id created } }
    ... on ValidationError { code message field index }
  }
}`;

class RetryableError extends Error {}

export class LazarusClient {
  readonly #o: Required<Omit<LazarusClientOptions, 'apiKey'>> & { apiKey: string | undefined };

  constructor(options: LazarusClientOptions) {
    this.#o = {
      retries: 5, minBackoffMs: 200, maxBackoffMs: 5_000, timeoutMs: 10_000, batchSize: 500, fetch: globalThis.fetch,
      ...options, apiKey: options.apiKey,
    };
    if (this.#o.batchSize < 1 || this.#o.batchSize > 1000) throw new RangeError('batchSize must be 1 to 1000');
  }

  /** Dead-letters one event; resolves once it is stored (or known). */
  async deadLetter(input: DeadLetterInput): Promise<RecordedDeadLetter> {
    const [result] = await this.deadLetterMany([input]);
    return result!;
  }

  /** Dead-letters many events, `batchSize` per request; results come back in input order. */
  async deadLetterMany(inputs: readonly DeadLetterInput[]): Promise<RecordedDeadLetter[]> {
    const prepared = inputs.map((input) => ({ generated: !input.dedupeKey, variables: toVariables(input) }));
    const results: RecordedDeadLetter[] = [];
    for (let offset = 0; offset < prepared.length; offset += this.#o.batchSize) {
      const chunk = prepared.slice(offset, offset + this.#o.batchSize);
      const answers = await this.#send(chunk.map((c) => c.variables), offset);
      answers.forEach((a, i) => {
        const { generated, variables } = chunk[i]!;
        results.push({ id: a.id, created: a.created || generated, dedupeKey: variables.dedupeKey });
      });
    }
    return results;
  }

  /**
   * Any GraphQL operation, for tools built on this client (the `lazarus` CLI). Answers with `data`;
   * a top-level error becomes a LazarusError with its code. Retries like deadLetterMany only when
   * `retry` is set: use it for reads and for writes that are safe to repeat.
   */
  async request<T = Record<string, unknown>>(query: string, variables: Record<string, unknown> = {}, options: { retry?: boolean } = {}): Promise<T> {
    return this.#withRetries(options.retry ? this.#o.retries : 0, async () => {
      const { body, status } = await this.#post(query, variables);
      const first = body.errors?.[0];
      if (!body.data || first) {
        const code = first?.extensions?.code ?? `HTTP_${status}`;
        if (code === 'INTERNAL_SERVER_ERROR') throw new RetryableError(first?.message ?? 'server error');
        throw new LazarusError(code, first?.message ?? `HTTP ${status}`, { field: first?.extensions?.field ?? null });
      }
      return body.data as T;
    });
  }

  async #send(inputs: ReturnType<typeof toVariables>[], offset: number): Promise<{ id: string; created: boolean }[]> {
    // Ingest is idempotent on the dedupe keys, so the whole batch may be retried.
    const { recordDeadLetters: result } = await this.request<{
      recordDeadLetters:
        | { __typename: 'RecordedDeadLetters'; results: { id: string; created: boolean }[] }
        | { __typename: 'ValidationError'; code: string; message: string; field: string; index: number | null };
    }>(MUTATION, { inputs }, { retry: true });
    if (result.__typename === 'ValidationError') {
      const index = result.index === null ? null : result.index + offset;
      throw new LazarusError(result.code, result.message, { field: result.field, index });
    }
    return result.results;
  }

  async #withRetries<T>(retries: number, attempt: () => Promise<T>): Promise<T> {
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof RetryableError) || n >= retries) {
          if (error instanceof RetryableError) throw new LazarusError('UNAVAILABLE', `gave up after ${n + 1} attempts: ${error.message}`, { cause: error.cause });
          throw error;
        }
        const cap = Math.min(this.#o.maxBackoffMs, this.#o.minBackoffMs * 2 ** n);
        await new Promise((r) => setTimeout(r, Math.random() * cap));
      }
    }
  }

  /** One POST; network trouble, 429 and 5xx are retryable. */
  async #post(query: string, variables: Record<string, unknown>): Promise<{ status: number; body: GraphQLBody }> {
    let response: Response;
    try {
      response = await this.#o.fetch(this.#o.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(this.#o.apiKey && { authorization: `Bearer ${this.#o.apiKey}` }) },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(this.#o.timeoutMs),
      });
    } catch (error) {
      throw new RetryableError(`request failed: ${(error as Error).message}`, { cause: error });
    }
    if (response.status === 429 || response.status >= 500) throw new RetryableError(`HTTP ${response.status}`);
    try {
      // Numbers a double cannot carry (12345678901234567890) stay exact, on Node 22 and later.
      return { status: response.status, body: parseJsonKeepingNumbers(await response.text()) as GraphQLBody };
    } catch (error) {
      throw new RetryableError(`unreadable response (HTTP ${response.status})`, { cause: error });
    }
  }
}

interface GraphQLBody {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string; field?: string } }[];
}

function toVariables(input: DeadLetterInput) {
  const e = input.error;
  const error = e instanceof Error
    ? { kind: input.errorKind ?? 'UNKNOWN', message: e.message, stack: e.stack ?? null }
    : e ? { kind: e.kind ?? input.errorKind ?? 'UNKNOWN', message: e.message ?? '', stack: e.stack ?? null } : input.errorKind ? { kind: input.errorKind } : null;
  return {
    eventType: input.eventType,
    payload: input.payload,
    error,
    queue: input.queue ?? null,
    source: input.source ?? null,
    orderingKey: input.orderingKey ?? null,
    orderingSeq: input.orderingSeq === undefined ? null : String(input.orderingSeq),
    headers: input.headers ?? null,
    occurredAt: input.occurredAt?.toISOString() ?? null,
    dedupeKey: input.dedupeKey ?? `lazarus-client:${randomUUID()}`,
    maxAttempts: input.maxAttempts ?? null,
    firstRetryAt: input.firstRetryAt?.toISOString() ?? null,
  };
}
