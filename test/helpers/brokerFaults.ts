// Pieces the broker fault tests share: the service with a RabbitMQ bridge declared, a broker's
// restart that always ends with it running again, and the counts a process reports.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Db } from '../../src/db/createDb.ts';
import { isPortOpen } from './brokers.ts';
import { postGraphQL, startService, type ServiceProcess } from './serviceProcess.ts';

const run = promisify(execFile);

/** The service with one RabbitMQ bridge over `queue` and no retry loop. */
export function startBridgeService(databaseUrl: string, bridge: { name: string; url: string; queue: string; prefetch?: number }): Promise<ServiceProcess> {
  return startService({
    DATABASE_URL: databaseUrl, RETRY_ENABLED: 'false',
    LAZARUS_BRIDGES: JSON.stringify([{ name: bridge.name, kind: 'rabbitmq', settings: { url: bridge.url, queue: bridge.queue, prefetch: bridge.prefetch ?? 100 } }]),
  });
}

export interface BridgeCounts {
  state: string;
  received: number;
  recorded: number;
  duplicates: number;
  poison: number;
  refused: number;
  lastError: string | null;
}

/** The process's own counts for its one bridge (GraphQL `bridges`). */
export async function bridgeCounts(service: ServiceProcess): Promise<BridgeCounts> {
  const { body } = await postGraphQL(service.url, '{ bridges { state received recorded duplicates poison refused lastError } }');
  return body.data.bridges[0];
}

/** `metric{labels} value` lines of /metrics whose name starts with `prefix`. */
export async function metricLines(service: ServiceProcess, prefix: string): Promise<string[]> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return text.split('\n').filter((line) => line.startsWith(prefix));
}

/**
 * Restarts the machine's RabbitMQ application (not its node: `stop_app` then `start_app`, seconds
 * rather than a minute). Durable queues and persistent messages survive it; every client connection
 * is cut. `start_app` runs even when `stop_app` failed half-way, so the broker is never left stopped.
 */
export async function restartRabbitApp(onDown: () => Promise<void> = async () => {}): Promise<{ downAfterMs: number; restartMs: number }> {
  const started = Date.now();
  let downAfterMs = -1;
  try {
    const stopping = run('rabbitmqctl', ['-q', 'stop_app'], { timeout: 120_000 });
    stopping.catch(() => {});
    // The AMQP port closes part-way through stop_app: that is when clients lose the broker.
    while (await isPortOpen(5672)) await new Promise((r) => setTimeout(r, 20));
    downAfterMs = Date.now() - started;
    await onDown();
    await stopping;
  } finally {
    await ensureRabbitRunning();
  }
  return { downAfterMs, restartMs: Date.now() - started };
}

/** `start_app` (a no-op on a running broker) and wait until it answers. */
export async function ensureRabbitRunning(): Promise<void> {
  await run('rabbitmqctl', ['-q', 'start_app'], { timeout: 120_000 });
  await run('rabbitmqctl', ['-q', 'await_startup'], { timeout: 120_000 });
}

/** Rows per AMQP message-id of the bridged dead letters: how many distinct ids, and rows in all. */
export async function rowsByMessageId(db: Db): Promise<{ distinct: number; rows: number; twice: number }> {
  const [r] = await db.$queryRaw<{ distinct: number; rows: number; twice: number }[]>`
    with per as (select headers->'properties'->>'messageId' as mid, count(*)::int as n from dead_letters group by 1)
    select count(*) filter (where mid is not null)::int as distinct, coalesce(sum(n), 0)::int as rows,
           count(*) filter (where n > 1)::int as twice
      from per`;
  return r!;
}
