// Issue 32 item 7: one INSERT of 500 distinct errors made 500 new error groups and 500 webhooks.
// A rule now raises at most maxAlertsPerWindow alerts per capWindowSeconds (default 10 per 300 s);
// the rest are recorded SUPPRESSED and counted in one digest alert, sent when the window closes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLServer } from '../src/api/server.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { startAlertDelivery, type AlertDelivery, type AlertFinished } from '../src/workers/retry/alertDelivery.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { silentLogger } from './helpers/retry.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();
let sink: Sink;
let admin: GraphQLServer;
const running: AlertDelivery[] = [];

beforeAll(async () => {
  sink = await startSink();
  admin = testServer(t.db, { authenticate: () => ({ name: 'admin-alice', role: 'admin' }) });
});
afterAll(() => sink.close());
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  sink.requests = [];
});

const CREATE = `mutation ($input: CreateAlertRuleInput!) { createAlertRule(input: $input) { id maxAlertsPerWindow capWindowSeconds } }`;
const UPDATE = `mutation ($input: UpdateAlertRuleInput!) { updateAlertRule(input: $input) { id maxAlertsPerWindow capWindowSeconds } }`;
const RULE = { name: 'new groups', trigger: 'NEW_GROUP', signingSecret: 'a-very-long-secret-value', allowPrivateTarget: true };

/** Resolves once `count` alerts have a final outcome recorded. */
function untilFinished(d: AlertDelivery, count: number): Promise<AlertFinished[]> {
  const finished: AlertFinished[] = [];
  return new Promise((resolve) => {
    const onFinished = (f: AlertFinished) => {
      if (f.outcome.kind === 'RETRY') return;
      finished.push(f);
      if (finished.length === count) {
        d.events.off('finished', onFinished);
        resolve(finished);
      }
    };
    d.events.on('finished', onFinished);
  });
}

interface AlertNode {
  id: string;
  subject: string;
  deliveryStatus: string;
  digestId: string | null;
}
interface AlertPage {
  pageInfo: { hasNextPage: boolean; endCursor: string };
  edges: { node: AlertNode }[];
}

/** Every alert through the alerts connection, page by page. */
async function allAlerts(): Promise<AlertNode[]> {
  const rows: AlertNode[] = [];
  let after: string | null = null;
  for (;;) {
    const result: { body: { data?: unknown } } = await execute(admin, `query ($after: String) {
      alerts(first: 500, after: $after) { pageInfo { hasNextPage endCursor } edges { node { id subject deliveryStatus digestId } } } }`, { after });
    const page: AlertPage = (result.body.data as { alerts: AlertPage }).alerts;
    rows.push(...page.edges.map((e) => e.node));
    if (!page.pageInfo.hasNextPage) return rows;
    after = page.pageInfo.endCursor;
  }
}

describe('the volume cap of an alert rule', () => {
  it('sends 10 alerts and one digest for 500 new groups from one INSERT, and the alerts query still shows all 500', async () => {
    const created = await execute(admin, CREATE, { input: { ...RULE, targetUrl: sink.url } });
    expect(created.body).toEqual({ data: { createAlertRule: { id: '1', maxAlertsPerWindow: 10, capWindowSeconds: 300 } } });
    await t.db.$executeRaw`insert into dead_letters (event_type, error_kind, error_message)
                           select 'flood.' || g, 'VALIDATION', 'field ' || g || ' is missing' from generate_series(1, 500) g`;
    await foldErrorGroupLedger(t.db);
    expect(await t.db.errorGroup.count()).toBe(500);

    const d = startAlertDelivery({ db: t.db, logger: silentLogger, pollIntervalMs: 60_000 });
    running.push(d);
    const firstTen = untilFinished(d, 10);
    d.poke();
    expect((await firstTen).map((f) => f.outcome.kind)).toEqual(Array(10).fill('DELIVERED'));

    // The cap's window closes (five minutes pass): the digest falls due and is sent once.
    await t.db.$executeRaw`update alerts set next_attempt_at = now() where subject = 'digest'`;
    const digestSent = untilFinished(d, 1);
    d.poke();
    const [digest] = await digestSent;
    expect(digest!.outcome.kind).toBe('DELIVERED');

    expect(sink.requests.length).toBeLessThanOrEqual(11);
    const body = sink.requests.at(-1)!.json as unknown as { subject: string; summary: string; details: { suppressed: number; first: { subject: string }[] } };
    expect(body.subject).toBe('digest');
    expect(body.summary).toMatch(/^490 more NEW_GROUP alerts suppressed by rule "new groups" \(at most 10 per 300 s\); first: group:\S+, group:\S+, group:\S+, group:\S+, group:\S+, …$/);
    expect(body.details).toMatchObject({ digest: true, suppressed: 490, maxAlertsPerWindow: 10, capWindowSeconds: 300 });
    expect(body.details.first).toHaveLength(5);

    const alerts = await allAlerts();
    const groups = alerts.filter((a) => a.subject.startsWith('group:'));
    expect(new Set(groups.map((a) => a.subject)).size).toBe(500);
    const digestId = digest!.id.toString();
    expect(alerts.find((a) => a.subject === 'digest')).toEqual({ id: digestId, subject: 'digest', deliveryStatus: 'DELIVERED', digestId: null });
    expect(groups.filter((a) => a.deliveryStatus === 'DELIVERED')).toHaveLength(10);
    expect(groups.filter((a) => a.deliveryStatus === 'SUPPRESSED' && a.digestId === digestId)).toHaveLength(490);
  });

  it('opens a new window once the last one closed: the next alert is sent on its own', async () => {
    await execute(admin, CREATE, { input: { ...RULE, targetUrl: sink.url, maxAlertsPerWindow: 1, capWindowSeconds: 60 } });
    await t.db.$executeRaw`insert into dead_letters (event_type, error_kind) select 'burst.' || g, 'VALIDATION' from generate_series(1, 3) g`;
    await foldErrorGroupLedger(t.db);
    await t.db.$executeRaw`update alert_rule_windows set started_at = started_at - interval '60 seconds'`;
    await t.db.$executeRaw`insert into dead_letters (event_type, error_kind) values ('later.1', 'VALIDATION')`;
    await foldErrorGroupLedger(t.db);

    const rows = await t.db.alert.findMany({ orderBy: { id: 'asc' }, select: { subject: true, deliveryStatus: true, details: true } });
    expect(rows.map((r) => [r.subject.replace(/[0-9]+$/, 'N'), r.deliveryStatus])).toEqual([
      ['group:N', 'PENDING'], ['digest', 'PENDING'], ['group:N', 'SUPPRESSED'], ['group:N', 'SUPPRESSED'], ['group:N', 'PENDING'],
    ]);
    expect(rows[1]!.details).toMatchObject({ suppressed: 2 });
  });

  it('takes the cap from the rule input and refuses one out of range, writing nothing', async () => {
    await execute(admin, CREATE, { input: { ...RULE, targetUrl: 'https://hooks.example.com/a', maxAlertsPerWindow: 3, capWindowSeconds: 60 } });
    const updated = await execute(admin, UPDATE, { input: { id: '1', maxAlertsPerWindow: 50 } });
    expect(updated.body).toEqual({ data: { updateAlertRule: { id: '1', maxAlertsPerWindow: 50, capWindowSeconds: 60 } } });

    for (const bad of [{ maxAlertsPerWindow: 0 }, { maxAlertsPerWindow: 100_001 }, { capWindowSeconds: 0 }]) {
      const refused = await execute(admin, UPDATE, { input: { id: '1', ...bad } });
      expect(refused.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: Object.keys(bad)[0], reason: 'OUT_OF_RANGE' });
    }
    expect(await t.db.alertRule.findUniqueOrThrow({ where: { id: 1n } })).toMatchObject({ maxAlertsPerWindow: 50, capWindowSeconds: 60 });
  });
});
