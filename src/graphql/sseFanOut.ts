// Fan-out for SSE subscribers that asked for the same thing. Subscribers with the same
// (operation, variables, role) whose stream is shareable (no resume cursor) join one group: the
// group reads one source stream, executes and encodes each event once, and writes the same bytes
// to every member's HTTP stream — per batch of events, not per event. Per subscriber there is only
// a list of references to those bytes, bounded by maxQueuedEvents (then SUBSCRIBER_TOO_SLOW, as
// for every other stream). Each member still went through parsing, validation and auth scopes,
// and its own subscribe resolver (arguments checked) before it joined; its own source is closed.
import { execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { tooSlowError } from '../events/boundedQueue.ts';
import type { Logger } from '../logger.ts';
import { stringifyResult } from './useSharedSseFrames.ts';

/** A subscription source that may be shared by every subscriber with the same key. */
export const SHAREABLE = Symbol('shareable source');

const encoder = new TextEncoder();
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
const PING = encoder.encode(':\n\n');
const PING_MS = 12_000;
const MAX_EVENTS_PER_WRITE = 256;
const NOT_YET = Symbol('not yet');

type Step = { step: IteratorResult<unknown> } | { error: unknown };
type MaskError = (error: unknown, message: string, isDev?: boolean) => Error;

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

  const frameOf = (result: ExecutionResult): Uint8Array => {
    const masked = result.errors?.length
      ? { ...result, errors: result.errors.map((e) => options.maskError(e, 'Unexpected error.', false)) }
      : result;
    return encoder.encode(`event: next\ndata: ${stringifyResult(masked as ExecutionResult)}\n\n`);
  };
  const errorFrame = (error: unknown) => {
    const masked = options.maskError(error, 'Unexpected error.', false);
    return encoder.encode(`event: next\ndata: ${stringifyResult({ errors: [masked as never] })}\n\n`);
  };

  // One event that cannot be executed or encoded (a resolver throwing, a value that overflows the
  // serialiser) is that event's error, sent to its subscribers like any result's error; the stream
  // goes on with the next event.
  const frameFor = async (group: Group, value: unknown): Promise<Uint8Array> => {
    try {
      return frameOf(await execute({ ...group.args, rootValue: value }));
    } catch (error) {
      return errorFrame(error);
    }
  };

  const pump = async (key: string, group: Group) => {
    const settle = (p: Promise<IteratorResult<unknown>>): Promise<Step> => p.then((step) => ({ step }), (error: unknown) => ({ error }));
    let pending: Promise<Step> | null = null;
    for (;;) {
      const frames: Uint8Array[] = [];
      let next: Step | typeof NOT_YET = await (pending ?? settle(group.source.next()));
      pending = null;
      let final: Uint8Array[] | null = null;
      for (;;) {
        if ('error' in next) final = [errorFrame(next.error), COMPLETE];
        else if (next.step.done) final = [COMPLETE];
        else frames.push(await frameFor(group, next.step.value));
        if (final || frames.length >= MAX_EVENTS_PER_WRITE) break;
        const candidate = settle(group.source.next());
        // Events already queued settle within this run of microtasks; a waiting source does not.
        next = await Promise.race([candidate, new Promise<typeof NOT_YET>((r) => setImmediate(r, NOT_YET))]);
        if (next === NOT_YET) {
          pending = candidate;
          break;
        }
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
      if (!request || !(source as { [SHAREABLE]?: boolean })[SHAREABLE]) return null;
      const accept = request.headers.get('accept') ?? '';
      if (!accept.includes('text/event-stream') || accept.includes('multipart/mixed')) return null;
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
