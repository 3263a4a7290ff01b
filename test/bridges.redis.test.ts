// The Redis Streams bridge against the local Redis (127.0.0.1:6379): a stream key of each test's own,
// read through a consumer group by a bridge that connects as an ACL user of this file's own (so its
// URL carries a password, and its rights can be taken away to lose an XACK).
import { randomBytes, randomUUID } from 'node:crypto';
import { once, type EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOutageLog } from '../src/db/outageLog.ts';
import { createBridgeBoard, resolveBridges } from '../src/workers/bridges/bridgeBoard.ts';
import type { BridgeSource } from '../src/workers/bridges/bridgeKind.ts';
import { lagOf } from '../src/workers/bridges/redis.ts';
import { BRIDGE_KINDS } from '../src/workers/bridges/registry.ts';
import { startBridge, type BridgePassSummary, type RunningBridge } from '../src/workers/bridges/runBridge.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
const user = `lazarus_test_${randomUUID().slice(0, 8)}`;
const password = randomBytes(16).toString('hex');
const url = `redis://${user}:${password}@127.0.0.1:6379`;
let admin: Redis;
beforeAll(async () => {
  admin = new Redis('redis://127.0.0.1:6379');
  await admin.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all');
});
afterAll(async () => {
  await admin.call('ACL', 'DELUSER', user);
  await admin.quit();
});

const running: RunningBridge[] = [];
const keys: string[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  if (keys.length > 0) await admin.del(...keys.splice(0));
});

let n = 0;
/** A fresh stream key and a bridge over it (not started). */
function setup(settings: Record<string, unknown> = {}) {
  n += 1;
  const key = `lazarus-test:bridge:${randomUUID()}`;
  keys.push(key, `${key}:refused`);
  const bridges = resolveBridges([{ name: `stream${n}`, kind: 'redis', settings: { url, stream: key, consumer: 'c1', ...settings } }], BRIDGE_KINDS);
  const board = createBridgeBoard(bridges);
  const start = (extra: { pollIntervalMs?: number } = {}) => {
    const r = startBridge({ bridge: bridges[0]!, board, db: t.db, logger: silentLogger, outage: createOutageLog(silentLogger), rules: { allowedEventTypes: [] }, ...extra });
    running.push(r);
    return r;
  };
  const add = (...fields: (string | Buffer)[]) => admin.xadd(key, '*', ...fields) as Promise<string>;
  return { key, board, start, add, bridge: bridges[0]! };
}

/** Resolves with the passes once `count` entries were stored, found stored or refused. */
function untilTaken(events: EventEmitter, count: number): Promise<BridgePassSummary[]> {
  const passes: BridgePassSummary[] = [];
  return new Promise((resolve, reject) => {
    const onPass = (s: BridgePassSummary) => {
      if (s.claimed > 0) passes.push(s);
      if (passes.reduce((sum, p) => sum + p.recorded + p.duplicates + p.refused, 0) >= count) {
        events.off('passCompleted', onPass);
        events.off('passFailed', reject);
        resolve(passes);
      }
    };
    events.on('passCompleted', onPass);
    events.on('passFailed', reject);
  });
}

/** Pending entries of the group, by consumer. */
async function pendingOf(key: string, group = 'lazarus'): Promise<Record<string, number>> {
  const [, , , consumers] = await admin.xpending(key, group) as [number, string | null, string | null, [string, string][] | null];
  return Object.fromEntries((consumers ?? []).map(([name, count]) => [name, Number(count)]));
}

const sum = (passes: BridgePassSummary[], field: keyof BridgePassSummary) => passes.reduce((s, p) => s + Number(p[field]), 0);

describe('the Redis Streams bridge', () => {
  it('stores each entry with its origin, its other fields as headers and its mapped fields, then acks it', async () => {
    const s = setup();
    const id = await s.add('payload', '{"orderId":7}', 'event-type', 'order.placed', 'error', 'card declined', 'error-kind', 'downstream_api',
      'queue', 'orders', 'source', 'checkout', 'trace', 'abc', 'blob', Buffer.from([0xff, 0x00, 0x01]));
    const bridge = s.start();
    await untilTaken(bridge.events, 1);
    const row = (await t.db.deadLetter.findMany())[0]!;
    expect(row).toMatchObject({
      eventType: 'order.placed', payload: { orderId: 7 }, errorKind: 'DOWNSTREAM_API', errorMessage: 'card declined',
      queue: 'orders', source: 'checkout', dedupeKey: `redis:${s.key}:lazarus:${id}`,
      origin: { kind: 'redis', bridge: s.bridge.name, stream: s.key, id },
      headers: {
        'event-type': 'order.placed', error: 'card declined', 'error-kind': 'downstream_api', queue: 'orders', source: 'checkout',
        trace: 'abc', blob: { $binary: Buffer.from([0xff, 0x00, 0x01]).toString('base64') },
      },
    });
    expect(row.occurredAt.getTime()).toBe(Number(id.split('-')[0]));
    await vi.waitFor(async () => expect(await pendingOf(s.key)).toEqual({}), { timeout: 10_000, interval: 20 });
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 1, recorded: 1, duplicates: 0, refused: 0, connection: 'CONNECTED' });
  });

  it('keeps JSON as JSON, other UTF-8 text as text and any other bytes exactly; an entry without the payload field is stored whole', async () => {
    const s = setup({ eventType: 'legacy.blob' });
    const bytes = randomBytes(300);
    await s.add('payload', '[1, "two", null]');
    await s.add('payload', 'plain words\r\n');
    await s.add('payload', bytes, 'n', '3');
    await s.add('payload', 'has a \u0000 NUL');
    await s.add('orderId', '9', 'reason', 'no stock');
    const bridge = s.start();
    await untilTaken(bridge.events, 5);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.eventType)).toEqual(Array(5).fill('legacy.blob'));
    expect(rows.map((r) => r.payload)).toEqual([
      [1, 'two', null],
      { $text: 'plain words\r\n' },
      { $binary: bytes.toString('base64') },
      { $binary: Buffer.from('has a \u0000 NUL').toString('base64') },
      { orderId: '9', reason: 'no stock' },
    ]);
    expect(Buffer.from((rows[2]!.payload as { $binary: string }).$binary, 'base64').equals(bytes)).toBe(true);
    expect(rows[2]!.headers).toEqual({ n: '3' });
    expect(rows[4]).toMatchObject({ headers: {}, queue: s.key, source: 'redis', errorKind: 'UNKNOWN', errorMessage: `read from stream ${s.key}` });
  });

  it('with payloadField null stores every entry whole, a field named twice as an array', async () => {
    const s = setup({ payloadField: null, eventTypeField: 'kind' });
    await s.add('payload', '{"a":1}', 'kind', 'x.happened', 'tag', 'one', 'tag', 'two');
    const bridge = s.start();
    await untilTaken(bridge.events, 1);
    const row = (await t.db.deadLetter.findMany())[0]!;
    expect(row).toMatchObject({ eventType: 'x.happened', payload: { payload: '{"a":1}', kind: 'x.happened', tag: ['one', 'two'] }, headers: {} });
  });
});

describe('poison entries', () => {
  it('stores what it can as bytes, copies what it cannot to <stream>:refused with an XACK, counts both and keeps going', async () => {
    const s = setup();
    const notUtf8 = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    const deep = '['.repeat(150) + ']'.repeat(150);
    const huge = Buffer.alloc(300 * 1024, 0x61);
    await s.add('payload', notUtf8);
    await s.add('payload', deep);
    const hugeId = await s.add('payload', huge, 'why', 'too big');
    await s.add('payload', '{}', 'note', 'x'.repeat(70 * 1024));
    await s.add('payload', '{"after":true}');
    const bridge = s.start();
    const passes = await untilTaken(bridge.events, 5);
    expect(sum(passes, 'poison')).toBe(3);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.payload)).toEqual([{ $binary: notUtf8.toString('base64') }, { $binary: Buffer.from(deep).toString('base64') }, { after: true }]);
    expect(s.board.get(s.bridge.name)).toMatchObject({ received: 5, recorded: 3, refused: 2, poison: { unstorable: 1, too_large: 1, bad_headers: 1 } });
    expect(s.board.get(s.bridge.name)!.lastError).toMatch(/refused a message: /);
    // Refused, not lost: copied byte-exact, with where it came from.
    await vi.waitFor(async () => expect(await admin.xlen(`${s.key}:refused`)).toBe(2), { timeout: 10_000, interval: 20 });
    const [, fields] = (await admin.xrangeBuffer(`${s.key}:refused`, '-', '+', 'COUNT', 1))[0]!;
    expect(fields.map((f) => (f.length > 100 ? f.equals(huge) : f.toString()))).toEqual(['payload', true, 'why', 'too big', 'lazarus-refused-from', `${s.key} ${hugeId}`]);
    await vi.waitFor(async () => expect(await pendingOf(s.key)).toEqual({}), { timeout: 10_000, interval: 20 });
  });
});

describe('acknowledgement', () => {
  it('leaves entries pending when the commit fails, and stores them once when it reads them again', async () => {
    const s = setup();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await s.add('payload', JSON.stringify({ i })));
    const locker = await t.handle.pool.connect();
    const { pid } = (await locker.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!;
    await locker.query('begin; lock table dead_letters in share mode');
    let failed: Promise<unknown>;
    try {
      // A long poll interval: the next pass after the failure comes only when poked.
      const bridge = s.start({ pollIntervalMs: 600_000 });
      failed = once(bridge.events, 'passFailed');
      const blocked = `select pid from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))`;
      await vi.waitFor(async () => expect((await t.handle.pool.query(blocked, [pid])).rowCount).toBe(1), { timeout: 20_000, interval: 20 });
      expect(await pendingOf(s.key)).toEqual({ c1: 3 });
      await t.handle.pool.query(`select pg_terminate_backend(pid) from (${blocked}) b`, [pid]);
      await failed;
    } finally {
      await locker.query('rollback');
      locker.release();
    }
    expect(await pendingOf(s.key)).toEqual({ c1: 3 });
    expect(await t.db.deadLetter.count()).toBe(0);
    // One is deleted from the stream meanwhile: it is acked, with nothing to store.
    await admin.xdel(s.key, ids[1]!);
    const bridge = running[0]!;
    const taken = untilTaken(bridge.events, 2);
    s.board.poke(s.bridge.name);
    expect(sum(await taken, 'recorded')).toBe(2);
    expect((await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } })).map((r) => r.payload)).toEqual([{ i: 0 }, { i: 2 }]);
    await vi.waitFor(async () => expect(await pendingOf(s.key)).toEqual({}), { timeout: 10_000, interval: 20 });
  });

  it('a lost XACK after the commit leaves the entries pending; a restart reads them again and stores nothing twice', async () => {
    const s = setup();
    for (let i = 0; i < 3; i++) await s.add('payload', JSON.stringify({ i }));
    await admin.call('ACL', 'SETUSER', user, '-xack');
    try {
      const first = s.start();
      const lostAck = once(first.events, 'sourceFailed');
      const passes = await untilTaken(first.events, 3);
      expect(sum(passes, 'recorded')).toBe(3);
      const [error] = await lostAck as [Error];
      expect(error.message).toMatch(/NOPERM/);
      await first.stop();
      running.splice(running.indexOf(first), 1);
    } finally {
      await admin.call('ACL', 'SETUSER', user, '+xack');
    }
    expect(await pendingOf(s.key)).toEqual({ c1: 3 });
    expect(await t.db.deadLetter.count()).toBe(3);

    const second = s.start();
    const passes = await untilTaken(second.events, 3);
    expect(sum(passes, 'duplicates')).toBe(3);
    expect(sum(passes, 'recorded')).toBe(0);
    await vi.waitFor(async () => expect(await pendingOf(s.key)).toEqual({}), { timeout: 10_000, interval: 20 });
    expect(await t.db.deadLetter.count()).toBe(3);
  });

  it('claims the entries a dead consumer left pending past claimIdleMs, and leaves a live consumer’s alone', async () => {
    const s = setup();
    await admin.xgroup('CREATE', s.key, 'lazarus', '0', 'MKSTREAM');
    const dead = [await s.add('payload', '{"of":"dead"}'), await s.add('payload', '{"of":"dead"}')];
    await admin.xreadgroup('GROUP', 'lazarus', 'dead', 'COUNT', 2, 'STREAMS', s.key, '>');
    // As if read an hour ago by a consumer that died.
    await admin.xclaim(s.key, 'lazarus', 'dead', 0, ...dead, 'IDLE', 3_600_000);
    await s.add('payload', '{"of":"alive"}');
    await admin.xreadgroup('GROUP', 'lazarus', 'alive', 'COUNT', 1, 'STREAMS', s.key, '>');
    const bridge = s.start();
    await untilTaken(bridge.events, 2);
    const rows = await t.db.deadLetter.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => (r.origin as { id: string }).id)).toEqual(dead);
    await vi.waitFor(async () => expect(await pendingOf(s.key)).toEqual({ alive: 1 }), { timeout: 10_000, interval: 20 });
  });
});

describe('lag', () => {
  it('is the entries not yet delivered to the group', async () => {
    const s = setup({ batchSize: 2 });
    for (let i = 0; i < 5; i++) await s.add('payload', String(i));
    const arrived = Promise.withResolvers<void>();
    const failures: Error[] = [];
    const source: BridgeSource = await s.bridge.kind.open(s.bridge.settings, { name: s.bridge.name, arrived: () => arrived.resolve(), failed: (e) => failures.push(e) });
    try {
      await arrived.promise;
      // One batch read ahead, waiting to be taken.
      expect(await source.lag()).toBe(3);
      expect(source.take(10).map((m) => m.record.payload)).toEqual([0, 1]);
      await vi.waitFor(async () => expect(await source.lag()).toBe(1), { timeout: 10_000, interval: 20 });
    } finally {
      await source.close();
    }
    expect(failures).toEqual([]);
    expect(await pendingOf(s.key)).toEqual({ c1: 4 });
  });

  it('falls back to the stream length less entries-read when Redis gives no lag', () => {
    expect(lagOf({ lag: 4, 'entries-read': 1 }, null)).toBe(4);
    expect(lagOf({ lag: null, 'entries-read': 7 }, 10)).toBe(3);
    expect(lagOf({ lag: null, 'entries-read': 12 }, 10)).toBe(0);
    expect(lagOf({}, 10)).toBeNull();
  });
});

describe('pause and resume', () => {
  it('stops reading when paused, stays paused across a restart, takes the waiting entries on resume; bridges never shows credentials', async () => {
    const s = setup();
    const server = testServer(t.db, { bridges: s.board });
    const first = s.start();
    await once(first.events, 'passCompleted');
    const pausedPass = new Promise<void>((resolve) => {
      const on = (p: BridgePassSummary) => {
        if (p.paused) {
          first.events.off('passCompleted', on);
          resolve();
        }
      };
      first.events.on('passCompleted', on);
    });
    const paused = await execute(server, `mutation ($name: String!) { pauseBridge(name: $name) { name state paused } }`, { name: s.bridge.name });
    expect(paused.body).toEqual({ data: { pauseBridge: { name: s.bridge.name, state: 'PAUSED', paused: true } } });
    await pausedPass;
    await s.add('payload', '{"waiting":1}');
    await s.add('payload', '{"waiting":2}');

    await first.stop();
    running.splice(running.indexOf(first), 1);
    const second = s.start();
    const [pass] = await once(second.events, 'passCompleted') as [BridgePassSummary];
    expect(pass).toMatchObject({ paused: true, claimed: 0 });
    // Nothing read while paused: both entries wait, undelivered.
    const [group] = (await admin.xinfo('GROUPS', s.key)) as unknown[][];
    expect(Object.fromEntries(Array.from({ length: group!.length / 2 }, (_, i) => [group![2 * i], group![2 * i + 1]]))).toMatchObject({ pending: 0, lag: 2 });
    expect(await t.db.deadLetter.count()).toBe(0);

    const taken = untilTaken(second.events, 2);
    const resumed = await execute(server, `mutation ($name: String!) { resumeBridge(name: $name) { state paused } }`, { name: s.bridge.name });
    // The runner may have connected already by the time the answer is read: the poke wakes it at once.
    expect(resumed.body).toEqual({ data: { resumeBridge: { state: expect.stringMatching(/^CONNECT(ING|ED)$/), paused: false } } });
    await taken;
    expect(await t.db.deadLetter.count()).toBe(2);

    // The lag is read beside the batches (every 2 s, runBridge.ts): it is known a moment after the resume.
    let shown = '';
    await vi.waitFor(async () => {
      const { body } = await execute<{ bridges: Record<string, unknown>[] }>(server, `{ bridges { name kind description state paused received recorded duplicates poison refused lag lastError } }`);
      expect(body.data?.bridges).toEqual([{
        name: s.bridge.name, kind: 'redis', description: `redis stream ${s.key} group lazarus on 127.0.0.1`,
        state: 'CONNECTED', paused: false, received: 2, recorded: 2, duplicates: 0, poison: 0, refused: 0, lag: expect.any(Number), lastError: null,
      }]);
      shown = JSON.stringify(body);
    }, { timeout: 10_000, interval: 50 });
    expect(shown).not.toContain(password);
    expect(shown).not.toContain(user);
  });
});

describe('settings', () => {
  it('are checked at start-up without echoing the URL, and default the group, start, batch and field names', () => {
    expect(() => resolveBridges([{ name: 'b', kind: 'redis', settings: { url: `http://${user}:${password}@x`, stream: 's' } }], BRIDGE_KINDS))
      .toThrow(/^LAZARUS_BRIDGES: bridge "b" \(redis\): settings\.url: url must be redis:\/\/host:port or rediss:\/\/host:port$/);
    expect(() => resolveBridges([{ name: 'b', kind: 'redis', settings: { url, stream: 's', groupStart: '>' } }], BRIDGE_KINDS)).toThrow(/settings\.groupStart/);
    const [bridge] = resolveBridges([{ name: 'b', kind: 'redis', settings: { url, stream: 's' } }], BRIDGE_KINDS);
    expect(bridge!.settings).toEqual({
      url, stream: 's', group: 'lazarus', groupStart: '0', batchSize: 100, claimIdleMs: 60_000, payloadField: 'payload',
      eventTypeField: 'event-type', errorField: 'error', errorKindField: 'error-kind', queueField: 'queue', sourceField: 'source', sourceStreamField: 'source-stream',
    });
    expect(bridge!.description).toBe('redis stream s group lazarus on 127.0.0.1');
  });
});
