// Every subscriber of the live feed receives the same event objects (one database read per batch),
// and subscribers usually send the same few operations. graphql-js would execute the selection set
// once per subscriber per event, which is what limits fan-out (docs/benchmarks.md, Live feed); this
// plugin executes it once per event per (operation, variables, role) and hands every matching
// subscriber that same result. The role is part of the key so a field restricted to a higher role
// can never be shared downwards. Results are immutable from here on (masking makes new objects).
import { createSourceEventStream, execute, print, type DocumentNode, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { GraphQLContext } from './schema/builder.ts';
import type { SseFanOut } from './sseFanOut.ts';

type Result = ExecutionResult | Promise<ExecutionResult>;

export function useSharedSubscriptionResults(fanOut?: SseFanOut): Plugin<GraphQLContext> {
  const results = new WeakMap<object, Map<string, Result>>();
  const printed = new WeakMap<DocumentNode, string>();
  const documentKey = (document: DocumentNode) => {
    let key = printed.get(document);
    if (key === undefined) printed.set(document, (key = print(document)));
    return key;
  };

  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(async (args: ExecutionArgs) => {
        const source = await createSourceEventStream(args);
        if (!isAsyncIterable(source)) return source;
        const role = (args.contextValue as GraphQLContext | undefined)?.principal?.role ?? '';
        const key = JSON.stringify([documentKey(args.document), args.operationName ?? null, args.variableValues ?? {}, role]);
        const request = (args.contextValue as { request?: Request } | undefined)?.request;
        const joined = fanOut?.join(request, key, args, source);
        if (joined) return joined;
        return mapAsyncIterator(source, (event) => {
          if (typeof event !== 'object' || event === null) return execute({ ...args, rootValue: event });
          let perEvent = results.get(event);
          if (!perEvent) results.set(event, (perEvent = new Map()));
          let result = perEvent.get(key);
          if (!result) perEvent.set(key, (result = execute({ ...args, rootValue: event })));
          return result;
        });
      });
    },
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

function mapAsyncIterator<T, U>(source: AsyncIterable<T>, map: (value: T) => U | Promise<U>): AsyncIterableIterator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const mapped: AsyncIterableIterator<U> = {
    async next() {
      const step = await iterator.next();
      return step.done ? { value: undefined, done: true } : { value: await map(step.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      if (iterator.throw) await iterator.throw(error);
      throw error;
    },
    [Symbol.asyncIterator]: () => mapped,
  };
  return mapped;
}
