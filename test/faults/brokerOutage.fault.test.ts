// Fault: the broker a policy delivers to is down for a minute (FAULTS_QUICK: 6 s), then back. A
// JetStream server of the test's own, killed after the service has connected to it, so its client
// reconnects. While it is away, the events wait: every attempt fails as UNREACHABLE and the next
// one follows the policy's backoff (FIXED here, so the bound is exact: no attempt sooner than the
// delay after the one before, never one per poll). Once it is back, every event SUCCEEDED, each
// exactly once in the stream, and nothing is left leased or pending.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { countByStatus, expectExactAccounting, scaled, waitFor } from '../helpers/faults.ts';
import { startNatsServer, type NatsServer } from '../helpers/natsServer.ts';
import { setPolicy } from '../helpers/retry.ts';
import { startService, type ServiceProcess } from '../helpers/serviceProcess.ts';

const OUTAGE_MS = scaled(60_000, 6_000);
const DELAY_MS = scaled(3_000, 1_000);
const POLL_MS = 100;
const EVENTS = scaled(2_000, 200);
const WARM = 10;

const t = useTestDatabase();
let nats: NatsServer | undefined;
let service: ServiceProcess | undefined;
afterAll(async () => {
  await service?.stop('SIGKILL');
  await nats?.stop();
});

const succeeded = async () => (await countByStatus(t.db)).SUCCEEDED ?? 0;

describe('a broker down for a while, then back', () => {
  it('holds the events with UNREACHABLE attempts that follow the backoff, then delivers every one once; nothing stuck', async () => {
    nats = await startNatsServer();
    const admin = await natsConnect({ servers: [nats.url] });
    await (await jetstreamManager(admin)).streams.add({ name: 'OUTAGE', subjects: ['outage.>'] });
    await admin.close();
    await setPolicy(t.db, 'order.placed', {
      targetKind: 'nats', targetSettings: { url: nats.url, subject: 'outage.orders' }, allowPrivateTarget: true,
      backoff: 'FIXED', baseDelayMs: DELAY_MS, maxDelayMs: DELAY_MS, maxAttempts: 1000, timeoutMs: 2000,
    });
    await t.db.$executeRaw`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g) from generate_series(1, ${WARM}::int) g`;
    service = await startService({ DATABASE_URL: t.url, RETRY_POLL_INTERVAL_MS: String(POLL_MS), RETRY_BATCH_SIZE: '200', RETRY_CONCURRENCY: '50' });
    await waitFor(async () => (await succeeded()) === WARM, 60_000, 'connected and delivering');

    await nats.kill();
    const downAt = Date.now();
    await t.db.$executeRaw`insert into dead_letters (event_type, payload) select 'order.placed', jsonb_build_object('n', g) from generate_series(${WARM + 1}::int, ${WARM + EVENTS}::int) g`;
    // The outage is the fault itself: a fixed time the broker stays away.
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    const during = await countByStatus(t.db);
    const [tried] = await t.db.$queryRaw<{ events: number; attempts: number; kinds: string[] }[]>`
      select count(distinct dead_letter_id)::int as events, count(*)::int as attempts,
             array_agg(distinct coalesce(failure_kind::text, outcome::text)) as kinds
        from delivery_attempts where outcome <> 'SUCCEEDED'`;
    await nats.start();
    const backAt = Date.now();
    await waitFor(async () => (await succeeded()) === WARM + EVENTS, 120_000, 'every event SUCCEEDED');
    const recoveryMs = Date.now() - backAt;

    const [per] = await t.db.$queryRaw<{ most: number; mean: number; shortest_gap_ms: number }[]>`
      with a as (
        select dead_letter_id, attempt_number, started_at,
               started_at - lag(started_at) over (partition by dead_letter_id order by attempt_number) as gap
          from delivery_attempts)
      select max(attempt_number)::int as most, avg(attempt_number)::float8 as mean,
             (extract(epoch from min(gap)) * 1000)::int as shortest_gap_ms
        from a`;
    const awayMs = backAt - downAt + recoveryMs;
    // At most one attempt per delay while it was away, plus the first and the one that succeeded.
    const bound = Math.floor(awayMs / DELAY_MS) + 2;
    const received = await readStream(nats.url, 'OUTAGE');
    const distinct = new Set(received).size;
    console.log(`broker down ${backAt - downAt} ms (FIXED backoff ${DELAY_MS} ms, poll ${POLL_MS} ms, ${EVENTS} events): `
      + `during it ${JSON.stringify(during)}, ${tried!.attempts} failed attempts on ${tried!.events} events (${tried!.kinds.join(', ')}); `
      + `all SUCCEEDED ${recoveryMs} ms after it was back; attempts per event max ${per!.most} (bound ${bound}, one per poll would be ~${Math.round(awayMs / POLL_MS)}), `
      + `mean ${per!.mean.toFixed(1)}, shortest gap ${per!.shortest_gap_ms} ms; in the stream ${received.length}, distinct ${distinct}`);

    // Waiting: PENDING, or PROCESSING when the snapshot caught an attempt under way; none given up.
    expect({ waiting: (during.PENDING ?? 0) + (during.PROCESSING ?? 0), SUCCEEDED: during.SUCCEEDED }).toEqual({ waiting: EVENTS, SUCCEEDED: WARM });
    expect(Object.keys(during).filter((s) => !['PENDING', 'PROCESSING', 'SUCCEEDED'].includes(s))).toEqual([]);
    expect(tried).toEqual({ events: EVENTS, attempts: expect.any(Number), kinds: ['UNREACHABLE'] });
    expect(per!.most).toBeLessThanOrEqual(bound);
    expect(per!.shortest_gap_ms).toBeGreaterThanOrEqual(DELAY_MS - 50);
    await expectExactAccounting(t.db, WARM + EVENTS, { SUCCEEDED: WARM + EVENTS });
    expect({ received: received.length, distinct }).toEqual({ received: WARM + EVENTS, distinct: WARM + EVENTS });
    expect(await service.stop()).toBe(0);
  }, 600_000);
});

/** The Nats-Msg-Id of every message in `stream`, through an ordered consumer. */
async function readStream(url: string, stream: string): Promise<string[]> {
  const nc = await natsConnect({ servers: [url] });
  try {
    const { state } = await (await jetstreamManager(nc)).streams.info(stream);
    const ids: string[] = [];
    const messages = await (await jetstream(nc).consumers.get(stream)).consume();
    for await (const m of messages) {
      ids.push(String(m.headers?.get('Nats-Msg-Id')));
      if (ids.length === state.messages) break;
    }
    await messages.close();
    return ids;
  } finally {
    await nc.close();
  }
}
