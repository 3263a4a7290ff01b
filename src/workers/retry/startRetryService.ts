// The retry loop as the service runs it: its own small pool (so API load cannot starve
// deliveries, and pg_stat_activity shows it as lazarus-retry), webhook delivery with in-process
// handlers taking precedence, and the config mapped to the loop's.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { OutageLog } from '../../db/outageLog.ts';
import { createDb } from '../../db/createDb.ts';
import type { Logger } from '../../logger.ts';
import { createDeliver, type DeadLetterHandler } from './delivery.ts';
import type { RetryMetrics } from './metrics.ts';
import { startRetryLoop, type RetryLoop } from './startRetryLoop.ts';
import { TARGET_KINDS } from '../targets/registry.ts';
import { closeTargetKinds, createTargetDeliver } from '../targets/targetKind.ts';
import { createSourceResolver } from '../targets/sourceTarget.ts';
import { findSourceRedirect } from '../../db/models/sourceRedirects.ts';

export interface RetryServiceOptions {
  /** In-process handlers by event type, for applications that embed Lazarus. */
  handlers?: ReadonlyMap<string, DeadLetterHandler>;
  /** Wake-up hints (the change feed); the loop polls on its timer regardless. */
  wake?: (fn: () => void) => () => void;
  metrics?: RetryMetrics;
  outage?: OutageLog;
}

export function startRetryService(databaseUrl: string, config: Config, logger: Logger, options: RetryServiceOptions = {}) {
  const handle = createDb(databaseUrl, {
    ...config.db,
    poolMax: config.retry.poolMax,
    applicationName: 'lazarus-retry',
  });
  const handlers = options.handlers ?? new Map<string, DeadLetterHandler>();
  const workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const resolveSource = createSourceResolver({ bridges: config.bridges, findRedirect: (kind, place) => findSourceRedirect(handle.db, kind, place) });
  const loop: RetryLoop = startRetryLoop({
    db: handle.db,
    deliver: createDeliver(handlers, createTargetDeliver(TARGET_KINDS, { resolveSource })),
    inProcessEventTypes: [...handlers.keys()],
    logger: logger.child({ component: 'retry', workerId }),
    ...(options.wake && { wake: options.wake }),
    ...(options.metrics && { metrics: options.metrics }),
    ...(options.outage && { outage: options.outage }),
    config: {
      workerId,
      batchSize: config.retry.batchSize,
      concurrency: config.retry.concurrency,
      leaseSeconds: config.retry.leaseSeconds,
      claimAhead: config.retry.claimAhead,
      pollIntervalMs: config.retry.pollIntervalMs,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
    },
  });
  return {
    loop,
    async stop() {
      await loop.stop();
      await closeTargetKinds(TARGET_KINDS); // broker connections; the next delivery opens them again
      await handle.close();
    },
  };
}
