// The console's Alerts view in a real headless Chromium, against the real service (its folder
// raises NEW_GROUP, its deliverer posts) on a real PostgreSQL, with local receivers. What the page
// claims is checked in the database and at the receiver.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startService, type RunningService } from '../src/service.ts';
import { axeViolations, screenshot } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { silentLogger } from './helpers/retry.ts';
import { startSink, type Sink, type SinkRequest } from './helpers/sink.ts';

const t = useTestDatabase();
const SECRET = `whsec_${Buffer.from('console-alert-signing-key').toString('base64')}`;
let receiver: Sink;
let refuser: Sink;

beforeAll(async () => {
  [receiver, refuser] = await Promise.all([startSink(), startSink()]);
  refuser.respond = (_req, res) => void res.writeHead(410).end('gone');
});
afterAll(async () => {
  await Promise.all([receiver?.close(), refuser?.close()]);
});
const app = useConsole(t, { LAZARUS_REDRIVE_THRESHOLD: '1000' }, { timeoutMs: 15_000 });

const sql = (text: string, values: unknown[] = []) => t.handle.pool.query(text, values);
const nextRequest = (sink: Sink, subject: string) => new Promise<SinkRequest>((resolve) => {
  const onRequest = (r: SinkRequest) => {
    if ((r.json as unknown as { subject?: string }).subject !== subject) return;
    sink.events.off('request', onRequest);
    resolve(r);
  };
  sink.events.on('request', onRequest);
});

describe('console alerts', () => {
  it('creates a rule (showing the private-target refusal beside the field), then a new group’s alert arrives delivered, and a test alert too', async () => {
    const page = await app.open('/alerts');
    await page.getByText('No alert rules yet.').waitFor();
    await page.getByRole('button', { name: 'New alert rule' }).click();
    await page.getByLabel('Name').fill('new groups to on-call');
    await page.getByLabel('When').selectOption('NEW_GROUP');
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByLabel(/Signing secret/).fill(SECRET);
    await page.getByRole('button', { name: 'Save alert rule' }).click();

    const refusal = page.locator('#alert-targetUrl-error');
    await refusal.getByText('PRIVATE_TARGET').waitFor();
    expect(await refusal.innerText()).toMatch(/private, loopback or metadata address \(127\.0\.0\.1\); set allowPrivateTarget/);
    expect(await page.getByLabel('Webhook URL').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, 'alert-rule-refused');
    expect(await axeViolations(page)).toEqual([]);
    expect((await sql('select count(*)::int as n from alert_rules')).rows[0].n).toBe(0);

    await page.getByLabel('allow a private-network target').check();
    await page.getByRole('button', { name: 'Save alert rule' }).click();
    const row = page.getByTestId('alert-rule');
    await row.getByRole('cell', { name: 'new groups to on-call', exact: true }).waitFor();
    expect(await row.innerText()).toMatch(/NEW_GROUP a new error group appears\s+Webhook → http:\/\/127\.0\.0\.1:\d+\/hook \(private target allowed\)\s+1 per subject per 15 min\s+enabled/);
    const { rows: [rule] } = await sql('select id::text, trigger::text, target_url, allow_private_target, enabled, updated_by from alert_rules');
    expect(rule).toEqual({ id: expect.any(String), trigger: 'NEW_GROUP', target_url: receiver.url, allow_private_target: true, enabled: true, updated_by: 'local' });

    // A plain SQL producer makes a new error group; the service's folder raises, its deliverer posts.
    await sql(`insert into dead_letters (event_type, error_kind, error_message, status) values ('invoice.sent', 'DOWNSTREAM_API', 'SMTP relay refused', 'EXHAUSTED')`);
    const { rows: [group] } = await sql(`select error_group_id::text as id from dead_letters where event_type = 'invoice.sent'`);
    const history = page.getByTestId('alert-history');
    // The subject names the group's error, not its id.
    const subject = history.getByRole('link', { name: 'DOWNSTREAM_API invoice.sent: SMTP relay refused' });
    await subject.waitFor();
    expect(await subject.getAttribute('href')).toBe(`/groups/${group.id}`);
    await history.getByTestId('alert-delivery').getByText('DELIVERED', { exact: true }).waitFor();
    // The page says DELIVERED only once the receiver answered, so its request is already recorded.
    const request = receiver.requests.find((r) => (r.json as unknown as { subject: string }).subject === `group:${group.id}`)!;
    expect(new Webhook(SECRET).verify(request.body, request.headers as Record<string, string>)).toMatchObject({
      trigger: 'NEW_GROUP', subject: `group:${group.id}`, rule: { id: rule.id, name: 'new groups to on-call' },
    });
    expect(await history.getByTestId('alert-row').innerText()).toMatch(/new groups to on-call\s+NEW_GROUP\s+DOWNSTREAM_API invoice\.sent: SMTP relay refused\s+.*\s+DELIVERED .*1 attempt$/);

    const tested = nextRequest(receiver, 'test');
    await page.getByRole('button', { name: 'Send test alert through new groups to on-call' }).click();
    await page.getByTestId('alerts-notice').getByText(/Test alert sent/).waitFor();
    await history.getByTestId('alert-row').filter({ hasText: 'Test alert sent by local' }).getByText('DELIVERED', { exact: true }).waitFor();
    expect((await tested).json).toMatchObject({ subject: 'test', details: { test: true, sentBy: 'local' } });

    await subject.click();
    await page.waitForURL(new RegExp(`/groups/${group.id}$`));
  });

  it('says before saving that a rule needs a signing secret, even for Slack, and generates one', async () => {
    const page = await app.open('/alerts');
    await page.getByRole('button', { name: 'New alert rule' }).click();
    await page.getByLabel('Name').fill('slack on-call');
    await page.getByLabel('Webhook URL').fill(receiver.url);
    await page.getByLabel('Body').selectOption('SLACK');
    await page.getByLabel('allow a private-network target').check();
    const secret = page.getByLabel('Signing secret (required)');
    expect(await secret.getAttribute('aria-describedby')).toBe('alert-secret-hint');
    expect(await page.locator('#alert-secret-hint').innerText()).toMatch(/Every alert is signed .*Slack does not check the signature, so a generated one will do/);

    // Saving without one is stopped by the form itself: nothing is sent, nothing is stored.
    await page.getByRole('button', { name: 'Save alert rule' }).click();
    expect(await secret.evaluate((input: HTMLInputElement) => input.validity.valueMissing)).toBe(true);
    expect((await sql('select count(*)::int as n from alert_rules')).rows[0].n).toBe(0);

    await page.getByRole('button', { name: 'Generate a secret' }).click();
    await page.getByRole('button', { name: 'Save alert rule' }).click();
    await page.getByTestId('alert-rule').getByRole('cell', { name: 'slack on-call', exact: true }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    const { rows } = await sql('select format::text, signing_secret from alert_rules');
    expect(rows).toEqual([{ format: 'SLACK', signing_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/) }]);
  });

  it('shows a failed delivery with its attempts and last error, filters by rule, edits a rule (the refusal beside the threshold), disables and deletes one', async () => {
    await sql(`insert into alert_rules (name, trigger, threshold, window_seconds, target_url, signing_secret, allow_private_target, format, enabled)
               values ('pager', 'REDRIVE_PAUSED', null, 900, $1, $2, true, 'SLACK', true), ('ops log', 'REDRIVE_PAUSED', null, 300, $3, $2, true, 'STANDARD', true),
                      ('backlog', 'BACKLOG', 10000, 3600, $3, $2, true, 'STANDARD', false)`,
      [refuser.url, SECRET, receiver.url]);
    await sql(`select lazarus_raise_alert('REDRIVE_PAUSED', 'redrive:7', 'redrive 7 paused: 60% of 100 deliveries failed')`);
    const page = await app.open('/alerts');
    const failed = page.getByTestId('alert-row').filter({ hasText: 'pager' });
    await failed.getByText('FAILED', { exact: true }).waitFor();
    expect(await failed.innerText()).toMatch(/redrive 7\s+redrive 7 paused: 60% of 100 deliveries failed\s+FAILED 1 attempt\s+last error: .*410/);
    await page.getByTestId('alert-row').filter({ hasText: 'ops log' }).getByText('DELIVERED', { exact: true }).waitFor();
    expect(await page.getByTestId('alert-rule').allInnerTexts()).toEqual([
      expect.stringMatching(/^pager\s+REDRIVE_PAUSED a redrive pauses itself \(its guard\)\s+Slack → http:\/\/127\.0\.0\.1:\d+\/hook \(private target allowed\)\s+1 per subject per 15 min\s+enabled/),
      expect.stringMatching(/^ops log\s+.*\s+Webhook → .*\s+1 per subject per 5 min\s+enabled/),
      expect.stringMatching(/^backlog\s+BACKLOG pending events above 10,000 events\s+Webhook → .*\s+1 per subject per 1 h\s+disabled/),
    ]);
    await screenshot(page, 'alerts');
    expect(await axeViolations(page)).toEqual([]);

    await page.getByLabel('Rule').selectOption({ label: 'pager' });
    await page.waitForURL(/rule=\d+/);
    await page.getByTestId('alert-row').filter({ hasText: 'ops log' }).waitFor({ state: 'detached' });
    expect(await page.getByTestId('alert-row').count()).toBe(1);

    await page.getByRole('button', { name: 'Edit backlog' }).click();
    const form = page.getByRole('form', { name: 'Edit the alert rule backlog' });
    expect(await form.getByLabel('Webhook URL').inputValue()).toBe(receiver.url);
    await form.getByLabel('Threshold (events)').fill('-1');
    await form.getByRole('button', { name: 'Save alert rule' }).click();
    await form.locator('#alert-threshold-error').getByText('OUT_OF_RANGE').waitFor();
    expect((await sql(`select threshold from alert_rules where name = 'backlog'`)).rows).toEqual([{ threshold: 10000 }]);
    await form.getByLabel('Threshold (events)').fill('20000');
    await form.getByRole('button', { name: 'Save alert rule' }).click();
    await page.getByTestId('alert-rule').filter({ hasText: 'pending events above 20,000 events' }).waitFor();
    expect((await sql(`select threshold, updated_by from alert_rules where name = 'backlog'`)).rows).toEqual([{ threshold: 20000, updated_by: 'local' }]);

    await page.getByRole('button', { name: 'Disable ops log' }).click();
    await page.getByRole('button', { name: 'Enable ops log' }).waitFor();
    expect((await sql(`select enabled from alert_rules where name = 'ops log'`)).rows).toEqual([{ enabled: false }]);

    await page.getByRole('button', { name: 'Delete pager' }).click();
    await page.getByRole('button', { name: 'Confirm delete of pager' }).click();
    await page.getByTestId('alerts-notice').getByText(/Deleted the rule pager/).waitFor();
    expect((await sql(`select name from alert_rules order by id`)).rows).toEqual([{ name: 'ops log' }, { name: 'backlog' }]);
    // The history keeps the deleted rule's alert under its name.
    await page.getByLabel('Rule').selectOption({ label: 'every rule' });
    await page.getByTestId('alert-row').filter({ hasText: 'pager (deleted)' }).waitFor();
  });
});

describe('console alerts with API keys', () => {
  let keyed: RunningService;
  beforeAll(async () => {
    keyed = await startService(
      loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: t.url, RETRY_ENABLED: 'false', LAZARUS_API_KEYS: 'dash:viewer:viewer-token-0123456789' }),
      silentLogger,
    );
  });
  afterAll(async () => keyed?.close());

  it('shows a viewer the rules with their target host only, and the history, with every change disabled and why', async () => {
    await sql(`insert into alert_rules (name, trigger, threshold, target_url, signing_secret, format)
               values ('backlog', 'BACKLOG', 5000, 'https://hooks.example.invalid/services/T000/B000/very-secret-path', $1, 'SLACK')`, [SECRET]);
    await sql(`select lazarus_raise_alert('BACKLOG', 'global', '6000 pending events, above the threshold of 5000')`);
    const page = await app.open('/alerts', { base: keyed.url });
    await page.getByLabel('API key').fill('viewer-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();

    const row = page.getByTestId('alert-rule');
    await row.getByRole('cell', { name: 'backlog', exact: true }).waitFor();
    expect(await row.innerText()).toMatch(/BACKLOG pending events above 5,000 events\s+Slack → hooks\.example\.invalid\s/);
    expect(await page.content()).not.toContain('very-secret-path');
    await page.getByTestId('alerts-role').getByText('your key has the viewer role').waitFor();
    await page.getByTestId('alert-row').getByText('6000 pending events').waitFor();
    for (const name of ['New alert rule', 'Edit backlog', 'Disable backlog', 'Send test alert through backlog', 'Delete backlog']) {
      const button = page.getByRole('button', { name });
      expect(await button.isDisabled()).toBe(true);
      expect(await button.getAttribute('title')).toBe('needs the admin role');
    }
    expect(await axeViolations(page)).toEqual([]);
  });
});
