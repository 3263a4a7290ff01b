// The service's background jobs come from one list (workers/jobs.ts), each with its own switch.
import { once } from 'node:events';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService } from '../src/service.ts';
import { listJobs, type JobDeps } from '../src/workers/jobs.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { silentLogger } from './helpers/retry.ts';

const t = useTestDatabase();
const SECRET = `whsec_${Buffer.from('service-jobs-signing-key').toString('base64')}`;

/** Which jobs the config enables; listJobs only describes them, so nothing here is started or read. */
function enabledJobs(env: Record<string, string>): string[] {
  const deps = { config: loadConfig(env), logger: silentLogger, retry: {} } as unknown as JobDeps;
  return listJobs(deps).filter((j) => j.isEnabled).map((j) => j.name);
}

describe('the job list', () => {
  it('turns each job on or off by its own setting, not by RETRY_ENABLED', () => {
    expect(enabledJobs({})).toEqual(['redrive runner', 'rollup compaction', 'delivery rollup compaction', 'error group folding', 'retry loop', 'alert delivery', 'alert evaluation', 'retention']);
    expect(enabledJobs({ RETRY_ENABLED: 'false' })).toEqual(['redrive runner', 'rollup compaction', 'delivery rollup compaction', 'error group folding', 'alert evaluation', 'retention']);
    expect(enabledJobs({ RETENTION_DAYS: '0', LAZARUS_ALERT_EVALUATE_INTERVAL_MS: '0' })).toEqual(['redrive runner', 'rollup compaction', 'delivery rollup compaction', 'error group folding', 'retry loop', 'alert delivery']);
  });
});

describe('the service with the retry loop disabled', () => {
  it('still purges old finished events and evaluates metric alert rules', async () => {
    const old = await insertDeadLetter(t.db, { status: 'RESOLVED', resolvedAt: new Date(Date.now() - 40 * 86_400_000) });
    await insertDeadLetter(t.db);
    await insertDeadLetter(t.db);
    await t.db.alertRule.create({
      data: { name: 'backlog', trigger: 'BACKLOG', threshold: 1, targetUrl: 'https://hooks.example.com/a', signingSecret: SECRET },
    });
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false' });
    const lines: { msg: string; jobs?: { name: string; everyMs: number; wakeChannel?: string }[]; disabled?: string[] }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const service = await startService(config, logger);
    try {
      expect([...service.jobs.keys()]).not.toContain('retry loop');
      // The start-up log says what runs, how often and what wakes it, and what is switched off.
      const started = lines.find((l) => l.msg === 'background jobs started')!;
      expect(started.disabled).toEqual(['retry loop', 'alert delivery']);
      expect(started.jobs!.map((j) => j.name)).toEqual([...service.jobs.keys()]);
      expect(started.jobs!.find((j) => j.name === 'error group folding')).toMatchObject({ wakeChannel: 'lazarus_changes' });
      expect(started.jobs!.find((j) => j.name === 'retention')).toEqual({ name: 'retention', everyMs: expect.any(Number) });
      // Both run at start-up; listen first, then look, so a run that ends in between is not missed.
      const purged = once(service.jobs.get('retention')!.events, 'runCompleted');
      const evaluated = once(service.jobs.get('alert evaluation')!.events, 'runCompleted');
      if (await t.db.deadLetter.findUnique({ where: { id: old.id } })) await purged;
      if ((await t.db.alert.count()) === 0) await evaluated;

      expect(await t.db.deadLetter.findUnique({ where: { id: old.id } })).toBeNull();
      expect(await t.db.alert.findMany({ select: { trigger: true, summary: true } })).toEqual([
        { trigger: 'BACKLOG', summary: '2 pending events, above the threshold of 1' },
      ]);
    } finally {
      await service.close();
    }
  });
});
