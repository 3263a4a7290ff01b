// Fault 4: the LISTEN connection goes half-open (a proxy in front of PostgreSQL silently drops its
// bytes both ways, no FIN or RST), at the worst moment: right after one of the listener's periodic
// checks succeeded. The service must notice and reconnect within 15 s, and miss nothing meanwhile.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBlackholeProxy, type BlackholeProxy } from '../helpers/blackholeProxy.ts';
import { testPool, useTestDatabase } from '../helpers/db.ts';
import { idsInCursorOrder, insertRows, logged, subscribeAll, type Subscriber } from '../helpers/feedSubscribers.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const t = useTestDatabase();
let sql: pg.Pool;
let proxy: BlackholeProxy;
let service: ServiceProcess | undefined;
let subscribers: Subscriber[] = [];

beforeAll(async () => {
  sql = testPool(t.url, { max: 2 });
  proxy = await startBlackholeProxy(t.url);
});
afterAll(async () => {
  for (const s of subscribers) s.close();
  await service?.stop('SIGKILL');
  await proxy.close();
  await sql.end();
});

describe('the LISTEN connection goes half-open', () => {
  it('is detected and replaced within 15 s with the default settings, and every subscriber still gets every row once, in order', async () => {
    // Every service connection goes through the proxy; only the listener's is blackholed.
    service = await startService({ DATABASE_URL: proxy.url, RETRY_ENABLED: 'false' });
    subscribers = await subscribeAll(service.url, sql);

    const halfOpenAt = await proxy.blackholeApplicationAfterNextReply('lazarus-listener');
    const ids = await insertRows(sql, 100);
    // Two watchdogs can notice first: pg-listen's paranoid check, or our NOTIFY heartbeat (which
    // drops the connection itself and connects a new one). Either way counts.
    const lost = await until(() => firstLogged(service!.output(), DETECTED), 20_000);
    const back = await until(() => firstLogged(service!.output(), RECOVERED, lost.time), 20_000);
    const detectedMs = lost.time - halfOpenAt;
    const recoveredMs = back.time - halfOpenAt;
    console.log(`half-open LISTEN connection: detected after ${detectedMs} ms, replaced after ${recoveredMs} ms`);
    expect(recoveredMs).toBeLessThanOrEqual(15_000);

    ids.push(...(await insertRows(sql, 100)));
    expect(await idsInCursorOrder(sql)).toEqual(ids);
    for (const s of subscribers) {
      await s.until(200);
      expect({ name: s.name, ids: s.ids, errors: s.errors }).toEqual({ name: s.name, ids, errors: [] });
    }
    expect(service.child.exitCode).toBeNull();
  });
});

const DETECTED = ['LISTEN connection lost; reconnecting', 'dropping the LISTEN connection and connecting a new one'];
const RECOVERED = ['LISTEN connection re-established', 'listening for changes'];

/** The earliest of these log messages at or after `since`. */
function firstLogged(output: string, messages: string[], since = 0) {
  const entries = messages.flatMap((msg) => logged(output, msg)).filter((entry) => entry.time >= since);
  return entries.sort((a, b) => a.time - b.time)[0];
}

async function until<T>(probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not logged within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
