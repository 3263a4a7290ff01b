// A subscriber's own buffer. Events arrive as fast as the database produces them; a client that
// reads slower than that would otherwise grow memory without bound, so past `max` queued events
// the subscription ends with a clear error and the client resumes from its last cursor.
import { GraphQLError } from 'graphql';

export interface BoundedQueue<T> extends AsyncIterableIterator<T> {
  push(items: readonly T[]): void;
  /** Ends the stream with `error` once the queued items are read. */
  fail(error: Error): void;
  /** Items waiting to be read. */
  readonly size: number;
  readonly isClosed: boolean;
}

/** Marks a queue whose events are the same for every subscriber with the same arguments (the SSE fan-out shares it). */
export const SHAREABLE = Symbol('shareable source');

const YIELD_EVERY = 64;

export function createBoundedQueue<T>(max: number, onClose: () => void): BoundedQueue<T> {
  const items: T[] = [];
  let waiting: ((result: IteratorResult<T>) => void) | null = null;
  let failure: Error | null = null;
  let closed = false;
  let inARow = 0;

  const close = () => {
    if (closed) return;
    closed = true;
    onClose();
  };

  const queue: BoundedQueue<T> = {
    push(batch) {
      if (closed || failure) return;
      for (const item of batch) {
        if (waiting) {
          const resolve = waiting;
          waiting = null;
          resolve({ value: item, done: false });
        } else items.push(item);
      }
      if (items.length > max) {
        items.length = 0;
        queue.fail(tooSlowError(max));
      }
    },
    fail(error) {
      if (closed || failure) return;
      failure = error;
      close();
      if (waiting) {
        const resolve = waiting;
        waiting = null;
        failure = null;
        // An iterator's next() rejecting ends the subscription with this error.
        resolve(Promise.reject(error) as never);
      }
    },
    get size() {
      return items.length;
    },
    get isClosed() {
      return closed;
    },
    next() {
      if (items.length) {
        const value = items.shift()!;
        // Draining a long queue with already-resolved promises would starve the event loop's I/O
        // (the feed's own reads among it); every so often, hand the item over on the next turn.
        if (++inARow % YIELD_EVERY === 0) return new Promise((resolve) => setImmediate(() => resolve({ value, done: false })));
        return Promise.resolve({ value, done: false });
      }
      inARow = 0;
      if (failure) {
        const error = failure;
        failure = null;
        return Promise.reject(error);
      }
      if (closed) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => {
        waiting = resolve;
      });
    },
    return() {
      items.length = 0;
      close();
      waiting?.({ value: undefined, done: true });
      waiting = null;
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error) {
      queue.return!();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return queue;
    },
  };
  return queue;
}

export function tooSlowError(max: number): Error {
  return new GraphQLError(
    `subscriber too slow: more than ${max} events were waiting to be sent; resubscribe with the last cursor you received`,
    { extensions: { code: 'SUBSCRIBER_TOO_SLOW' } },
  );
}
