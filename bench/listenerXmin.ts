// npm run bench:listener-xmin — does the service's LISTEN session hold a snapshot (backend_xmin,
// which holds back VACUUM) while this process's event loop is busy? The real listener
// (createChangeListener) runs on this main thread; a sampler thread reads the listener backend's
// backend_xmin and wait_event every 10 ms and sends change hints at BENCH_NOTIFY_RATE per second
// (BENCH_NOTIFY_CONNECTIONS sessions). Every round the main thread idles 1 s, then busy-waits
// BENCH_BLOCK_MS, as serialising a large fan-out does on a loaded machine. Prints the longest run
// of samples with a backend_xmin, how many samples waited in ClientWrite, and hints sent/received.
// Env: BENCH_ADMIN_URL, BENCH_NOTIFY_RATE (2000), BENCH_NOTIFY_CONNECTIONS (4), BENCH_BLOCK_MS
// (2000), BENCH_ROUNDS (5), BENCH_HINT_IDS (ids per hint, 1; the trigger lists up to 50),
// BENCH_HINT_PAD (characters added to each hint, 0; 7000 reproduces the hold within a 2 s block
// with hints far larger than the trigger's). `apparentXminAgeMs` is now() − xact_start of the
// listener whenever it showed a backend_xmin: what a long-transaction probe would call its age.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { createChangeListener, LISTENER_APPLICATION_NAME } from '../src/live/changeListener.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from '../test/helpers/databases.ts';
import { longestApparentXminAgeMs, longestXminHoldMs, startXminSampler } from '../test/helpers/listenerXminSampler.ts';

const adminUrl = process.env.BENCH_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const notifyRate = Number(process.env.BENCH_NOTIFY_RATE ?? 2000);
const notifyConnections = Number(process.env.BENCH_NOTIFY_CONNECTIONS ?? 4);
const blockMs = Number(process.env.BENCH_BLOCK_MS ?? 2000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const hintPadChars = Number(process.env.BENCH_HINT_PAD ?? 0);
const idsPerHint = Number(process.env.BENCH_HINT_IDS ?? 1);

const busyWait = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

const name = randomDatabaseName('lazarus_bench');
const url = await createDatabase(adminUrl, name);
try {
  const listener = createChangeListener({ url, logger: pino({ level: 'warn' }) });
  let hints = 0;
  listener.onHint(() => void (hints += 1));
  await listener.start();
  try {
    const sampler = await startXminSampler({
      url, applicationName: LISTENER_APPLICATION_NAME, intervalMs: 10, notifyRate, notifyConnections, hintPadChars, idsPerHint,
    });
    const blockStarts: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await sleep(1_000);
      blockStarts.push(Date.now());
      busyWait(blockMs);
    }
    await sleep(1_000);
    const { samples, notified } = await sampler.stop();
    await sleep(500);
    const withXmin = samples.filter((s) => s.xmin !== null).length;
    const clientWrite = samples.filter((s) => s.waitEvent === 'ClientWrite').length;
    // Per round: how long into the block the listener's backend first waited to write to us.
    const firstClientWriteMs = blockStarts.map((start) => {
      const first = samples.find((s) => s.at >= start && s.at <= start + blockMs && s.waitEvent === 'ClientWrite');
      return first ? first.at - start : null;
    });
    console.log(JSON.stringify({
      notifyRate, idsPerHint, hintPadChars, blockMs, rounds, samples: samples.length,
      samplesWithXmin: withXmin, samplesInClientWrite: clientWrite, firstClientWriteMs,
      longestXminHoldMs: longestXminHoldMs(samples), apparentXminAgeMs: Math.round(longestApparentXminAgeMs(samples)), notified, hintsReceived: hints,
    }));
  } finally {
    await listener.stop();
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await dropDatabase(adminUrl, name);
}
