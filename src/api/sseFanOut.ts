// Subscriptions over SSE, written for fan-out, in Yoga's wire format (the same frames, pings and
// `complete` event). A subscriber's stream is written one of two ways:
// - Shared (createSseFanOut). Subscribers with the same (operation, variables, role) whose stream is
//   shareable (no resume cursor) join one group: the group reads one source stream, executes and
//   encodes each event once, and writes the same bytes to every member's HTTP stream. Per
//   subscriber there is only a list of references to those bytes, bounded by maxQueuedEvents (then
//   SUBSCRIBER_TOO_SLOW, as for every other stream). Each member still went through parsing,
//   validation and auth scopes, and its own subscribe resolver (arguments checked) before it
//   joined; its own source is closed.
// - Its own (useSharedSseFrames, for every other SSE subscription). useSharedSubscriptionResults
//   hands every subscriber with the same key the same result object; Yoga's own SSE writer would
//   still JSON-serialise and encode it once per subscriber. Here a result's `event: next` frame is
//   encoded once (cached by result object) and the same bytes go to every stream. Per-subscriber
//   results (errors, masking) are encoded for that subscriber only.
// Either way, the events already waiting when a stream is written go out in one write (readReady).
import { execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { SHAREABLE, tooSlowError } from '../live/boundedQueue.ts';
import type { Logger } from '../logger.ts';

const encoder = new TextEncoder();
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
const PING = encoder.encode(':\n\n');
const PING_MS = 12_000;
// Bounds one write; more events than this go in the next one.
const MAX_EVENTS_PER_WRITE = 256;
const NOT_YET = Symbol('not yet');
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' };

type Step = { step: IteratorResult<unknown> } | { error: unknown };
type MaskError = (error: unknown, message: string, isDev?: boolean) => Error;

const wantsEventStream = (request: Request) => {
  const accept = request.headers.get('accept') ?? '';
  return accept.includes('text/event-stream') && !accept.includes('multipart/mixed');
};

const nextFrame = (result: ExecutionResult) => encoder.encode(`event: next\ndata: ${stringifyResult(result)}\n\n`);

/**
 * Reads an iterator in batches: each call waits for one step, then takes the steps that settle
 * within the same run of microtasks (events already queued; a source still waiting loses the race
 * against setImmediate), up to MAX_EVENTS_PER_WRITE, and stops after a done or failed step. A step
 * still pending is kept for the next call.
 */
function readReady(iterator: AsyncIterator<unknown>): () => Promise<Step[]> {
  const settle = (p: Promise<IteratorResult<unknown>>): Promise<Step> => p.then((step) => ({ step }), (error: unknown) => ({ error }));
  let pending: Promise<Step> | null = null;
  return async () => {
    const steps: Step[] = [];
    let next: Step | typeof NOT_YET = await (pending ?? settle(iterator.next()));
    pending = null;
    for (;;) {
      steps.push(next);
      if ('error' in next || next.step.done || steps.length >= MAX_EVENTS_PER_WRITE) return steps;
      const candidate = settle(iterator.next());
      next = await Promise.race([candidate, new Promise<typeof NOT_YET>((resolve) => setImmediate(resolve, NOT_YET))]);
      if (next === NOT_YET) {
        pending = candidate;
        return steps;
      }
    }
  };
}

interface Sink {
  parts: Uint8Array[];
  events: number;
  ended: boolean;
  wake: (() => void) | null;
  leave: () => void;
}

interface Group {
  source: AsyncIterator<unknown>;
  args: ExecutionArgs;
  sinks: Set<Sink>;
}

export interface SseFanOut {
  /** Joins the subscriber to its group; null when its source cannot be shared. */
  join(request: Request | undefined, key: string, args: ExecutionArgs, source: AsyncIterable<unknown>): AsyncIterableIterator<never> | null;
  /** The byte stream for a request that joined a group, if it did. */
  streamFor(request: Request, onClose: () => void): ReadableStream<Uint8Array> | null;
}

export interface SseFanOutOptions {
  maxQueuedEvents: number;
  maskError: MaskError;
  logger: Logger;
}

export function createSseFanOut(options: SseFanOutOptions): SseFanOut {
  const groups = new Map<string, Group>();
  const byRequest = new WeakMap<Request, Sink>();

  const end = (sink: Sink, last: Uint8Array[]) => {
    if (sink.ended) return;
    sink.ended = true;
    sink.parts.push(...last);
    sink.wake?.();
  };

  const errorFrame = (error: unknown) => nextFrame({ errors: [options.maskError(error, 'Unexpected error.', false) as never] });

  // One event that cannot be executed or encoded (a resolver throwing, a value that overflows the
  // serialiser) is that event's error, sent to its subscribers like any result's error; the stream
  // goes on with the next event.
  const frameFor = async (group: Group, value: unknown): Promise<Uint8Array> => {
    try {
      const result = await execute({ ...group.args, rootValue: value });
      const masked = result.errors?.length ? { ...result, errors: result.errors.map((e) => options.maskError(e, 'Unexpected error.', false)) } : result;
      return nextFrame(masked as ExecutionResult);
    } catch (error) {
      return errorFrame(error);
    }
  };

  const pump = async (key: string, group: Group) => {
    const read = readReady(group.source);
    for (;;) {
      const frames: Uint8Array[] = [];
      let final: Uint8Array[] | null = null;
      for (const next of await read()) {
        if ('error' in next) final = [errorFrame(next.error), COMPLETE];
        else if (next.step.done) final = [COMPLETE];
        else frames.push(await frameFor(group, next.step.value));
      }
      if (groups.get(key) !== group) return;
      const bytes = frames.length === 1 ? frames[0]! : frames.length ? Buffer.concat(frames) : null;
      for (const sink of group.sinks) {
        if (sink.ended) continue;
        if (bytes) {
          sink.parts.push(bytes);
          sink.events += frames.length;
          if (sink.events > options.maxQueuedEvents) {
            sink.parts.length = 0;
            end(sink, [errorFrame(tooSlowError(options.maxQueuedEvents)), COMPLETE]);
            continue;
          }
        }
        if (final) end(sink, final);
        else sink.wake?.();
      }
      if (final) {
        groups.delete(key);
        return;
      }
    }
  };

  const leave = (key: string, group: Group, sink: Sink) => {
    group.sinks.delete(sink);
    if (group.sinks.size === 0 && groups.get(key) === group) {
      groups.delete(key);
      void group.source.return?.();
    }
  };

  return {
    join(request, key, args, source) {
      if (!request || !(source as { [SHAREABLE]?: boolean })[SHAREABLE] || !wantsEventStream(request)) return null;
      let group = groups.get(key);
      if (group) void source[Symbol.asyncIterator]().return?.();
      else {
        group = { source: source[Symbol.asyncIterator](), args, sinks: new Set() };
        groups.set(key, group);
        const failed = group;
        // Never silently: whatever stops the pump ends every member's stream with the error.
        void pump(key, group).catch((error: unknown) => {
          options.logger.error({ err: error }, 'SSE fan-out failed; ending its streams');
          if (groups.get(key) === failed) groups.delete(key);
          for (const sink of failed.sinks) end(sink, [errorFrame(error), COMPLETE]);
          void failed.source.return?.();
        });
      }
      const joined = group;
      let done: ((r: IteratorResult<never>) => void) | null = null;
      const sink: Sink = { parts: [], events: 0, ended: false, wake: null, leave: () => leave(key, joined, sink) };
      group.sinks.add(sink);
      byRequest.set(request, sink);
      // What Yoga iterates: nothing, until the subscriber leaves; the bytes go through streamFor.
      const idle: AsyncIterableIterator<never> = {
        next: () => new Promise((resolve) => (done = resolve)),
        return: () => {
          sink.leave();
          done?.({ value: undefined, done: true });
          return Promise.resolve({ value: undefined, done: true });
        },
        [Symbol.asyncIterator]: () => idle,
      };
      return idle;
    },
    streamFor(request, onClose) {
      const sink = byRequest.get(request);
      if (!sink) return null;
      let ping: NodeJS.Timeout | undefined;
      const close = () => {
        clearInterval(ping);
        sink.ended = true;
        sink.leave();
        onClose();
      };
      return new ReadableStream<Uint8Array>({
        start(controller) {
          // Some browsers wait for a first chunk before exposing the response.
          controller.enqueue(PING);
          ping = setInterval(() => {
            sink.parts.push(PING);
            sink.wake?.();
          }, PING_MS);
          ping.unref();
        },
        async pull(controller) {
          while (!sink.parts.length && !sink.ended) await new Promise<void>((resolve) => (sink.wake = resolve));
          sink.wake = null;
          const parts = sink.parts.splice(0);
          sink.events = 0;
          if (parts.length) controller.enqueue(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
          if (sink.ended) {
            close();
            controller.close();
          }
        },
        cancel: close,
      });
    },
  };
}

/** Writes SSE subscriptions: a group's shared stream when the request joined one, else its own. */
export function useSharedSseFrames(fanOut?: SseFanOut): Plugin {
  const frames = new WeakMap<object, Uint8Array>();
  const frameOf = (result: unknown): Uint8Array => {
    const key = typeof result === 'object' && result !== null ? result : null;
    let frame = key ? frames.get(key) : undefined;
    if (!frame) {
      frame = nextFrame(result as ExecutionResult);
      if (key) frames.set(key, frame);
    }
    return frame;
  };

  return {
    onResultProcess({ request, result, setResultProcessor }) {
      if (!isAsyncIterable(result) || !wantsEventStream(request)) return;
      const shared = fanOut?.streamFor(request, () => void result[Symbol.asyncIterator]().return?.());
      if (shared) {
        setResultProcessor((_value, fetchAPI) => new fetchAPI.Response(shared, { status: 200, headers: SSE_HEADERS }), 'text/event-stream');
        return;
      }
      setResultProcessor((value, fetchAPI) => sseResponse(value as AsyncIterable<unknown>, fetchAPI, frameOf), 'text/event-stream');
    },
  };
}

function sseResponse(
  result: AsyncIterable<unknown>,
  fetchAPI: { ReadableStream: typeof ReadableStream; Response: typeof Response },
  frameOf: (result: unknown) => Uint8Array,
): Response {
  const iterator = result[Symbol.asyncIterator]();
  const read = readReady(iterator);
  let ping: NodeJS.Timeout | undefined;
  const stream = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      // Some browsers wait for a first chunk before exposing the response.
      controller.enqueue(PING);
      ping = setInterval(() => {
        if (controller.desiredSize === null) clearInterval(ping);
        else if (controller.desiredSize > 0) controller.enqueue(PING);
      }, PING_MS);
      ping.unref();
    },
    async pull(controller) {
      const parts: Uint8Array[] = [];
      for (const next of await read()) {
        if ('error' in next) {
          flush(controller, parts);
          clearInterval(ping);
          controller.error(next.error);
          return;
        }
        if (next.step.value != null) parts.push(frameOf(next.step.value));
        if (next.step.done) {
          parts.push(COMPLETE);
          flush(controller, parts);
          clearInterval(ping);
          controller.close();
          return;
        }
      }
      flush(controller, parts);
    },
    async cancel() {
      clearInterval(ping);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, { status: 200, headers: SSE_HEADERS });
}

function flush(controller: ReadableStreamDefaultController<Uint8Array>, parts: Uint8Array[]): void {
  if (parts.length === 1) controller.enqueue(parts[0]!);
  else if (parts.length > 1) controller.enqueue(Buffer.concat(parts));
}

/** Yoga's serialisation: `extensions.http` and error internals never reach the client. */
function stringifyResult(result: ExecutionResult): string {
  if (!result.errors?.length && !(result.extensions as { http?: unknown } | undefined)?.http) return JSON.stringify(result);
  const { http: _http, ...extensions } = (result.extensions ?? {}) as Record<string, unknown>;
  return JSON.stringify({
    ...result,
    errors: result.errors?.map((error) => {
      const json = typeof error.toJSON === 'function' ? error.toJSON() : { message: error.message };
      const { http: _h, unexpected: _u, ...errorExtensions } = (json.extensions ?? {}) as Record<string, unknown>;
      return { ...json, extensions: Object.keys(errorExtensions).length ? errorExtensions : undefined };
    }),
    extensions: Object.keys(extensions).length ? extensions : undefined,
  });
}
