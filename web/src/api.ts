// How the console talks to the API: queries and mutations over POST (urql), live data over one
// graphql-ws socket. The API key stays in this tab's sessionStorage only.
import { Client, type CombinedError } from '@urql/core';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import { print, type DocumentNode } from 'graphql';
import { useEffect, useRef, useSyncExternalStore } from 'react';
import { exactFetchExchange } from './exactFetchExchange.ts';

const KEY_STORAGE = 'lazarus.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}
export function storeKey(key: string | null): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export interface Api {
  urql: Client;
  ws: WsClient;
}

export function createApi(key: string | null): Api {
  const authorization = key ? `Bearer ${key}` : undefined;
  const urql = new Client({
    url: '/graphql',
    exchanges: [exactFetchExchange],
    preferGetMethod: false,
    requestPolicy: 'network-only',
    fetchOptions: (): RequestInit => (authorization ? { headers: { authorization } } : {}),
  });
  const ws = createWsClient({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    connectionParams: authorization ? { authorization } : {},
    // useLiveStream re-subscribes itself, from its last cursor, so the socket does not retry.
    retryAttempts: 0,
    lazyCloseTimeout: 2_000,
  });
  ws.on('connected', () => connection.set('online'));
  ws.on('closed', (event) => {
    if ((event as CloseEvent | undefined)?.code !== 1000) connection.set('offline');
  });
  return { urql, ws };
}

/** 'offline' while the live socket is down; the banner and re-subscriptions follow it. */
type ConnectionState = 'online' | 'offline';
const connection = (() => {
  let state: ConnectionState = 'online';
  const listeners = new Set<() => void>();
  return {
    get: () => state,
    set(next: ConnectionState) {
      if (next === state) return;
      state = next;
      for (const l of listeners) l();
    },
    subscribe(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
})();

export function useConnectionState(): ConnectionState {
  return useSyncExternalStore(connection.subscribe, connection.get);
}

/** A GraphQL error's code (UNAUTHENTICATED, BAD_USER_INPUT, …) and message, for showing where it happened. */
export function describeError(error: CombinedError | Error | unknown): { code: string; message: string; field?: string; reason?: string } {
  const e = error as CombinedError;
  const first = e?.graphQLErrors?.[0];
  if (first) {
    const ext = first.extensions as { code?: string; field?: string; reason?: string };
    return { code: ext.code ?? 'ERROR', message: first.message, field: ext.field, reason: ext.reason };
  }
  if (e?.networkError) return { code: 'NETWORK', message: `the service did not answer: ${e.networkError.message}` };
  return { code: 'ERROR', message: error instanceof Error ? error.message : String(error) };
}

interface LiveOptions<T> {
  query: DocumentNode;
  variables: Record<string, unknown>;
  /** Cursor to resume after, when the subscription takes one (`after`). */
  cursorOf?: (data: T) => string | null;
  onData: (data: T) => void;
  onError?: (message: string) => void;
  enabled?: boolean;
}

/**
 * A subscription that survives dropped connections: when the socket closes it subscribes again,
 * with `after` set to the last cursor it saw, so changes made while it was away are replayed
 * (the API keeps the feed ordered and resumable), not lost.
 */
export function useLiveStream<T>(api: Api, options: LiveOptions<T>): void {
  const latest = useRef(options);
  latest.current = options;
  const key = JSON.stringify(options.variables);
  useEffect(() => {
    if (options.enabled === false) return;
    let stopped = false;
    let cursor: string | null = (options.variables.after as string | null | undefined) ?? null;
    let dispose: (() => void) | null = null;
    let delay = 500;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const start = () => {
      if (stopped) return;
      const o = latest.current;
      const variables = o.cursorOf ? { ...o.variables, after: cursor } : o.variables;
      dispose = api.ws.subscribe<T>(
        { query: print(o.query), variables },
        {
          next: (result) => {
            if (result.errors?.length) {
              latest.current.onError?.(result.errors.map((e) => e.message).join('; '));
              return;
            }
            delay = 500;
            const data = result.data as T;
            cursor = latest.current.cursorOf?.(data) ?? cursor;
            latest.current.onData(data);
          },
          // A list of GraphQL errors is the API refusing the request (bad filter, role): say so, do not retry.
          error: (error) =>
            Array.isArray(error)
              ? latest.current.onError?.(error.map((e: { message: string }) => e.message).join('; '))
              : retry(),
          complete: () => retry(),
        },
      );
    };
    const retry = () => {
      if (stopped) return;
      connection.set('offline');
      timer = setTimeout(start, delay);
      delay = Math.min(delay * 2, 5_000);
    };
    start();
    return () => {
      stopped = true;
      clearTimeout(timer);
      dispose?.();
    };
    // The stream restarts when its variables change, not on every render.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, key, options.enabled]);
}
