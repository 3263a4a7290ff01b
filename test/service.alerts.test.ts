// Alerts as the service runs them: a rule created over GraphQL, a metric trigger evaluated on the
// service's periodic job, and the alert delivered to a local receiver, signed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../src/config.ts';
import { startService } from '../src/service.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { silentLogger } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
const SECRET = `whsec_${Buffer.from('service-alert-signing-key').toString('base64')}`;
let sink: Sink;
beforeAll(async () => {
  sink = await startSink();
});
afterAll(() => sink.close());

describe('the service with alerts', () => {
  it('evaluates a BACKLOG rule created over GraphQL and delivers its alert, signed', async () => {
    await insertDeadLetter(t.db);
    await insertDeadLetter(t.db);
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, LAZARUS_ALERT_EVALUATE_INTERVAL_MS: '1000' });
    const service = await startService(config, silentLogger);
    try {
      const arrived = new Promise<{ body: string; headers: Record<string, string> }>((resolve) =>
        sink.events.once('request', (r: { body: string; headers: Record<string, string> }) => resolve(r)));
      const response = await fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'mutation ($input: CreateAlertRuleInput!) { createAlertRule(input: $input) { id } }',
          variables: { input: { name: 'backlog', trigger: 'BACKLOG', threshold: 1, targetUrl: sink.url, allowPrivateTarget: true, signingSecret: SECRET } },
        }),
      });
      expect(await response.json()).toEqual({ data: { createAlertRule: { id: '1' } } });

      const request = await arrived;
      expect(new Webhook(SECRET).verify(request.body, request.headers)).toMatchObject({
        trigger: 'BACKLOG', subject: 'global', summary: '2 pending events, above the threshold of 1', details: { value: 2, threshold: 1 },
      });
    } finally {
      await service.close();
    }
  });

  it('reads its evaluation interval from LAZARUS_ALERT_EVALUATE_INTERVAL_MS, refusing bad values', () => {
    expect(loadConfig({}).alerts).toEqual({ evaluateIntervalMs: 15_000 });
    expect(() => loadConfig({ LAZARUS_ALERT_EVALUATE_INTERVAL_MS: '10' })).toThrow(/LAZARUS_ALERT_EVALUATE_INTERVAL_MS:/);
  });
});
