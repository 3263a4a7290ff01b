// Subscriptions over SSE, written for fan-out. useSharedSubscriptionResults hands every subscriber
// with the same (operation, variables, role) the same result object; Yoga's own SSE writer would
// still JSON-serialise and encode it once per subscriber and write each event separately. Here a
// result's `event: next` frame is encoded once (cached by result object) and the same bytes go to
// every stream, and the events already waiting for a subscriber when it is written to go out in
// one write instead of one each. Per-subscriber results (errors, masking) are encoded for that
// subscriber only. The wire format is Yoga's: the same frames, pings and `complete` event.
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { ExecutionResult } from 'graphql';
import type { SseFanOut } from './sseFanOut.ts';

const PING_MS = 12_000;
// Bounds one write; more events than this go in the next pull.
const MAX_FRAMES_PER_WRITE = 256;
const encoder = new TextEncoder();
const PING = encoder.encode(':\n\n');
const COMPLETE = encoder.encode('event: complete\ndata:\n\n');
const NOT_YET = Symbol('not yet');
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' };

type Step = { step: IteratorResult<unknown> } | { error: unknown };

export function useSharedSseFrames(fanOut?: SseFanOut): Plugin {
  const frames = new WeakMap<object, Uint8Array>();
  const frameOf = (result: unknown): Uint8Array => {
    const key = typeof result === 'object' && result !== null ? result : null;
    let frame = key ? frames.get(key) : undefined;
    if (!frame) {
      frame = encoder.encode(`event: next\ndata: ${stringifyResult(result as ExecutionResult)}\n\n`);
      if (key) frames.set(key, frame);
    }
    return frame;
  };

  return {
    onResultProcess({ request, result, setResultProcessor }) {
      if (!isAsyncIterable(result)) return;
      const accept = request.headers.get('accept') ?? '';
      if (!accept.includes('text/event-stream') || accept.includes('multipart/mixed')) return;
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
  let pending: Promise<Step> | null = null;
  let ping: NodeJS.Timeout | undefined;
  const settle = (promise: Promise<IteratorResult<unknown>>): Promise<Step> =>
    promise.then((step) => ({ step }), (error: unknown) => ({ error }));
  // Whatever is already queued for this subscriber settles within the current run of
  // microtasks; an iterator still waiting for the feed loses the race against setImmediate.
  const ifReady = (promise: Promise<Step>) =>
    Promise.race([promise, new Promise<typeof NOT_YET>((resolve) => setImmediate(resolve, NOT_YET))]);

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
      let next: Step | typeof NOT_YET = await (pending ?? settle(iterator.next()));
      pending = null;
      for (;;) {
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
        if (parts.length >= MAX_FRAMES_PER_WRITE) break;
        const candidate = settle(iterator.next());
        next = await ifReady(candidate);
        if (next === NOT_YET) {
          pending = candidate;
          break;
        }
      }
      flush(controller, parts);
    },
    async cancel() {
      clearInterval(ping);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(stream, {
    status: 200,
    headers: SSE_HEADERS,
  });
}

function flush(controller: ReadableStreamDefaultController<Uint8Array>, parts: Uint8Array[]): void {
  if (parts.length === 1) controller.enqueue(parts[0]!);
  else if (parts.length > 1) controller.enqueue(Buffer.concat(parts));
}

/** Yoga's serialisation: `extensions.http` and error internals never reach the client. */
export function stringifyResult(result: ExecutionResult): string {
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
