// The LISTEN session must not hold a snapshot (backend_xmin, which holds back VACUUM) while this
// process's event loop is busy. PostgreSQL takes a snapshot to read its notification queue and keeps
// it while it writes the notifications out; when the client stops reading and the socket buffers
// fill (~5 MB on loopback), that write blocks (wait_event ClientWrite) with the snapshot held. The
// trigger's hints are 96–490 bytes, so a stall of a second or two does not get there (docs/live-feed.md,
// "Does the listener hold a snapshot?"). The sampler runs in a worker thread, so it keeps reading
// pg_stat_activity and sending hints while the main thread busy-waits.
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createChangeListener, LISTENER_APPLICATION_NAME, type ChangeListener } from '../src/live/changeListener.ts';
import { useTestDatabase } from './helpers/db.ts';
import { longestXminHoldMs, startXminSampler, type XminSample, type XminSamplerOptions } from './helpers/listenerXminSampler.ts';

const t = useTestDatabase();
let listener: ChangeListener | undefined;

afterEach(async () => {
  await listener?.stop();
});

const busyWait = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/** Blocks this event loop for `blockMs` while hints arrive; the listener backend's samples meanwhile. */
async function samplesDuringBlock(blockMs: number, load: Pick<XminSamplerOptions, 'notifyRate' | 'notifyConnections' | 'hintPadChars'>): Promise<XminSample[]> {
  // A paranoid check every 200 ms, so a statement has just run on the session when the block starts.
  listener = createChangeListener({ url: t.url, logger: pino({ level: 'silent' }), paranoidCheckMs: 200 });
  let hints = 0;
  listener.onHint(() => void (hints += 1));
  await listener.start();
  const sampler = await startXminSampler({ url: t.url, applicationName: LISTENER_APPLICATION_NAME, intervalMs: 5, ...load });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const blockedFrom = Date.now();
  busyWait(blockMs);
  const blockedUntil = Date.now();
  const { samples, notified } = await sampler.stop();
  await vi.waitFor(() => expect(hints).toBe(notified), { timeout: 20_000, interval: 20 });
  const during = samples.filter((s) => s.at >= blockedFrom && s.at <= blockedUntil);
  expect(during.length).toBeGreaterThan(20);
  return during;
}

describe('the LISTEN session while the event loop is blocked', () => {
  it('holds no snapshot and never blocks writing to the client while trigger-sized hints arrive', async () => {
    const during = await samplesDuringBlock(1_500, { notifyRate: 1_000, notifyConnections: 4 });
    expect(during.filter((s) => s.waitEvent === 'ClientWrite')).toEqual([]);
    // A snapshot taken to read the queue lasts microseconds, so one sample may catch it; a held one
    // would show in consecutive samples for as long as the block lasts.
    expect(longestXminHoldMs(during)).toBeLessThan(250);
  });
});
