// Subscribers of a real service's change feed, over SSE and over graphql-ws, that record every
// event they receive, for the change-feed fault scenarios (test/faults/feed*.fault.test.ts).
import { createClient } from 'graphql-ws';
import pg from 'pg';
import { WebSocket } from 'ws';
import { subscribeSse } from './sse.ts';

export const CHANGED_AFTER = `subscription ($after: String) {
  deadLetterChanged(after: $after) { cursor isNew deadLetter { id } }
}`;
export const ADDED = 'subscription { deadLetterAdded { cursor isNew deadLetter { id } } }';

type Change = { cursor: string; isNew: boolean; deadLetter: { id: string } };
type Message = { data?: Record<string, Change> | null; errors?: unknown[] };

export interface Subscriber {
  name: string;
  /** Row ids in the order they arrived. */
  ids: string[];
  cursors: string[];
  errors: unknown[];
  /** Resolves once `n` events have arrived; rejects after `timeoutMs` or on a stream error. */
  until(n: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

function collector(name: string): Subscriber & { push(message: Message): void; fail(error: unknown): void } {
  let wake: () => void = () => {};
  const s = {
    name,
    ids: [] as string[],
    cursors: [] as string[],
    errors: [] as unknown[],
    push(message: Message) {
      if (message.errors) s.errors.push(...message.errors);
      const change = message.data && Object.values(message.data)[0];
      if (change) {
        s.ids.push(change.deadLetter.id);
        s.cursors.push(change.cursor);
      }
      wake();
    },
    fail(error: unknown) {
      s.errors.push(error);
      wake();
    },
    async until(n: number, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (s.ids.length < n) {
        if (s.errors.length) throw new Error(`${name} failed: ${JSON.stringify(s.errors)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${name} has ${s.ids.length} of ${n} events after ${timeoutMs} ms`);
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, left);
        });
        clearTimeout(timer);
      }
    },
    close: () => {},
  };
  return s;
}

/** An SSE subscription that keeps reading in the background. `serviceUrl` is the service's base URL. */
export async function sseSubscriber(serviceUrl: string, name: string, query: string, variables: Record<string, unknown> = {}): Promise<Subscriber> {
  const s = collector(name);
  const stream = await subscribeSse<Record<string, Change>>(`${serviceUrl}/graphql`, query, variables);
  let open = true;
  void (async () => {
    while (open) {
      try {
        s.push(await stream.next(3_600_000));
      } catch (error) {
        if (open) s.fail(error);
        return;
      }
    }
  })();
  s.close = () => {
    open = false;
    stream.close();
  };
  return s;
}

/** A graphql-ws subscription on the same endpoint. */
export function wsSubscriber(serviceUrl: string, name: string, query: string, variables: Record<string, unknown> = {}): Subscriber {
  const s = collector(name);
  const client = createClient({ url: `${serviceUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  const unsubscribe = client.subscribe<Record<string, Change>>({ query, variables }, {
    next: (message) => s.push(message as Message),
    error: (error) => s.fail(error),
    complete: () => {},
  });
  s.close = () => {
    unsubscribe();
    void client.dispose();
  };
  return s;
}

/**
 * One SSE deadLetterAdded subscriber, plus SSE and WebSocket deadLetterChanged subscribers that
 * resume from a sentinel row's cursor: resuming makes their start independent of when the
 * server registers them, so every later row must reach each of them exactly once.
 */
export async function subscribeAll(serviceUrl: string, sql: pg.Pool | pg.Client): Promise<Subscriber[]> {
  const added = await sseSubscriber(serviceUrl, 'sse deadLetterAdded', ADDED);
  const sentinel = await insertRows(sql, 1, 'sentinel');
  await added.until(1);
  if (added.ids[0] !== sentinel[0]) throw new Error('the first event is not the sentinel row');
  const after = added.cursors[0];
  added.ids.length = 0;
  added.cursors.length = 0;
  return [
    added,
    await sseSubscriber(serviceUrl, 'sse deadLetterChanged(after)', CHANGED_AFTER, { after }),
    wsSubscriber(serviceUrl, 'ws deadLetterChanged(after) #1', CHANGED_AFTER, { after }),
    wsSubscriber(serviceUrl, 'ws deadLetterChanged(after) #2', CHANGED_AFTER, { after }),
  ];
}

/** Inserts `n` rows one statement (and transaction) each, as a plain SQL producer would; returns their ids. */
export async function insertRows(sql: pg.Pool | pg.Client, n: number, eventType = 'order.placed', before?: (i: number) => Promise<void>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    await before?.(i);
    const { rows } = await sql.query<{ id: string }>(`insert into dead_letters (event_type, payload) values ($1, '{}') returning id::text`, [eventType]);
    ids.push(rows[0]!.id);
  }
  return ids;
}

/** Every row id in change-cursor order (the order subscribers must see new rows in). */
export async function idsInCursorOrder(sql: pg.Pool | pg.Client, eventType = 'order.placed'): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(`select id::text from dead_letters_current where event_type = $1 order by change_xid, change_id`, [eventType]);
  return rows.map((r) => r.id);
}

/** The service's log lines with this message, as parsed JSON. */
export function logged(output: string, msg: string): { time: number; [key: string]: unknown }[] {
  return output
    .split('\n')
    .filter((line) => line.includes(msg))
    .map((line) => JSON.parse(line) as { time: number; msg: string })
    .filter((entry) => entry.msg === msg);
}
