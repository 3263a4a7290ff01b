// Alert rules over GraphQL (admins only, coded refusals that write nothing, the SSRF rule at save)
// and the alert history connection.
import { beforeAll, describe, expect, it } from 'vitest';
import { foldErrorGroups } from '../src/db/sql/foldErrorGroups.ts';
import { raiseAlert } from '../src/domain/alerts.ts';
import type { GraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';

const t = useTestDatabase();
let admin: GraphQLServer;
let operator: GraphQLServer;
let viewer: GraphQLServer;

beforeAll(() => {
  const make = (role: 'admin' | 'operator' | 'viewer') => testServer(t.db, { authenticate: () => ({ name: `${role}-alice`, role }) });
  [admin, operator, viewer] = [make('admin'), make('operator'), make('viewer')];
});

const RULE_FIELDS = 'id name trigger threshold windowSeconds enabled targetUrl format allowPrivateTarget hasSigningSecret updatedBy';
const CREATE = `mutation ($input: CreateAlertRuleInput!) { createAlertRule(input: $input) { ${RULE_FIELDS} } }`;
const UPDATE = `mutation ($input: UpdateAlertRuleInput!) { updateAlertRule(input: $input) { ${RULE_FIELDS} } }`;
const DELETE = 'mutation ($id: ID!) { deleteAlertRule(id: $id) { id name } }';
const SEND_TEST = 'mutation ($ruleId: ID!) { sendTestAlert(ruleId: $ruleId) { id ruleName trigger subject summary deliveryStatus rule { id } } }';
const VALID = { name: 'backlog', trigger: 'BACKLOG', threshold: 1000, targetUrl: 'https://hooks.example.com/alerts', signingSecret: 'a-very-long-secret-value' };
const snapshot = () => t.db.$queryRaw`select * from alert_rules order by id`;

describe('alert rules over GraphQL', () => {
  it('creates, lists, updates and deletes a rule, recording the admin', async () => {
    const created = await execute(admin, CREATE, { input: { ...VALID, format: 'SLACK', windowSeconds: 60 } });
    expect(created.body).toEqual({
      data: {
        createAlertRule: {
          id: '1', name: 'backlog', trigger: 'BACKLOG', threshold: 1000, windowSeconds: 60, enabled: true,
          targetUrl: 'https://hooks.example.com/alerts', format: 'SLACK', allowPrivateTarget: false, hasSigningSecret: true, updatedBy: 'admin-alice',
        },
      },
    });

    const updated = await execute(admin, UPDATE, { input: { id: '1', trigger: 'NEW_GROUP', enabled: false } });
    expect(updated.body.data?.updateAlertRule).toMatchObject({ trigger: 'NEW_GROUP', threshold: null, enabled: false, windowSeconds: 60 });
    expect((await execute(admin, '{ alertRules { name trigger } }')).body).toEqual({ data: { alertRules: [{ name: 'backlog', trigger: 'NEW_GROUP' }] } });

    expect((await execute(admin, DELETE, { id: '1' })).body).toEqual({ data: { deleteAlertRule: { id: '1', name: 'backlog' } } });
    expect(await t.db.alertRule.count()).toBe(0);
  });

  it('accepts a private target only with allowPrivateTarget', async () => {
    const { body } = await execute(admin, CREATE, { input: { ...VALID, targetUrl: 'http://127.0.0.1:9/hook', allowPrivateTarget: true } });
    expect(body.data?.createAlertRule).toMatchObject({ targetUrl: 'http://127.0.0.1:9/hook', allowPrivateTarget: true });

    const unset = await execute(admin, UPDATE, { input: { id: '1', allowPrivateTarget: false } });
    expect(unset.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'targetUrl', reason: 'PRIVATE_TARGET' });
    expect(await t.db.alertRule.findUniqueOrThrow({ where: { id: 1n } })).toMatchObject({ allowPrivateTarget: true });
  });

  it.each([
    [{ ...VALID, targetUrl: 'http://127.0.0.1:8080/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ ...VALID, targetUrl: 'http://[::ffff:7f00:1]/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ ...VALID, targetUrl: 'http://169.254.169.254/latest/meta-data' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ ...VALID, targetUrl: 'http://localhost/hook' }, 'targetUrl', 'PRIVATE_TARGET'],
    [{ ...VALID, targetUrl: 'ftp://example.com/x' }, 'targetUrl', 'INVALID_URL'],
    [{ ...VALID, targetUrl: 'not a url' }, 'targetUrl', 'INVALID_URL'],
    [{ ...VALID, name: '   ' }, 'name', 'INVALID_NAME'],
    [{ ...VALID, name: 'x'.repeat(201) }, 'name', 'INVALID_NAME'],
    [{ ...VALID, threshold: undefined }, 'threshold', 'THRESHOLD_REQUIRED'],
    [{ ...VALID, threshold: -1 }, 'threshold', 'OUT_OF_RANGE'],
    [{ ...VALID, trigger: 'REGRESSION' }, 'threshold', 'THRESHOLD_NOT_ALLOWED'],
    [{ ...VALID, windowSeconds: 0 }, 'windowSeconds', 'OUT_OF_RANGE'],
    [{ ...VALID, windowSeconds: 31 * 86_400 }, 'windowSeconds', 'OUT_OF_RANGE'],
    [{ ...VALID, signingSecret: 'short' }, 'signingSecret', 'INVALID_SECRET'],
    [{ ...VALID, signingSecret: 'whsec_not base64 at all!' }, 'signingSecret', 'INVALID_SECRET'],
    [{ ...VALID, enabled: null }, 'enabled', 'NULL_NOT_ALLOWED'],
  ])('refuses %j on %s (%s) and writes nothing', async (input, field, reason) => {
    await execute(admin, CREATE, { input: { ...VALID, name: 'existing' } });
    const before = await snapshot();

    const { body } = await execute(admin, CREATE, { input });

    expect(body.data ?? null).toBeNull();
    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field, reason });
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a second rule with the same name, and an update onto another rule’s name', async () => {
    await execute(admin, CREATE, { input: VALID });
    await execute(admin, CREATE, { input: { ...VALID, name: 'other' } });
    const before = await snapshot();

    const twice = await execute(admin, CREATE, { input: VALID });
    const renamed = await execute(admin, UPDATE, { input: { id: '2', name: 'backlog' } });

    expect(twice.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'name', reason: 'DUPLICATE_NAME' });
    expect(renamed.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'name', reason: 'DUPLICATE_NAME' });
    expect(await snapshot()).toEqual(before);
  });

  it('answers NOT_FOUND for an unknown rule and BAD_USER_INPUT for a malformed id', async () => {
    const missing = await execute(admin, UPDATE, { input: { id: '99', enabled: false } });
    const gone = await execute(admin, DELETE, { id: '99' });
    const malformed = await execute(admin, DELETE, { id: 'abc' });

    expect(missing.body.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', id: '99' });
    expect(gone.body.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', id: '99' });
    expect(malformed.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it.each([['operator'], ['viewer']] as const)('refuses a %s every rule change, a test alert and the target URL with FORBIDDEN, writing nothing', async (role) => {
    const server = role === 'operator' ? operator : viewer;
    await execute(admin, CREATE, { input: VALID });
    const before = await snapshot();

    const results = await Promise.all([
      execute(server, '{ alertRules { id targetUrl } }'),
      execute(server, CREATE, { input: { ...VALID, name: 'mine' } }),
      execute(server, UPDATE, { input: { id: '1', enabled: false } }),
      execute(server, DELETE, { id: '1' }),
      execute(server, SEND_TEST, { ruleId: '1' }),
    ]);

    expect(results.map((r) => r.body.errors?.[0]?.extensions?.code)).toEqual(['FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN']);
    expect(await snapshot()).toEqual(before);
    expect(await t.db.alert.count()).toBe(0);
  });

  it.each([['operator'], ['viewer']] as const)('shows a %s every rule with its target host but not the URL', async (role) => {
    await execute(admin, CREATE, { input: { ...VALID, targetUrl: 'https://hooks.slack.com:8443/services/T0/B0/secret-path', format: 'SLACK' } });

    const { body } = await execute(role === 'operator' ? operator : viewer, '{ alertRules { id name trigger threshold windowSeconds enabled format targetHost hasSigningSecret } }');

    expect(body).toEqual({
      data: { alertRules: [{ id: '1', name: 'backlog', trigger: 'BACKLOG', threshold: 1000, windowSeconds: 900, enabled: true, format: 'SLACK', targetHost: 'hooks.slack.com:8443', hasSigningSecret: true }] },
    });
    expect(JSON.stringify(body)).not.toContain('secret-path');
  });

  it('sends a test alert through a rule, enabled or not, outside its throttle; NOT_FOUND for an unknown rule', async () => {
    await execute(admin, CREATE, { input: { ...VALID, enabled: false } });
    await raiseAlert(t.db, { trigger: 'REDRIVE_PAUSED', subjectId: 1, summary: 'no rule of this trigger: nothing raised' });

    const sent = await execute(admin, SEND_TEST, { ruleId: '1' });
    const again = await execute(admin, SEND_TEST, { ruleId: '1' });
    const missing = await execute(admin, SEND_TEST, { ruleId: '99' });
    const malformed = await execute(admin, SEND_TEST, { ruleId: 'x' });

    expect(sent.body).toEqual({
      data: { sendTestAlert: { id: '1', ruleName: 'backlog', trigger: 'BACKLOG', subject: 'test', summary: "Test alert sent by admin-alice: checking this rule's target", deliveryStatus: 'PENDING', rule: { id: '1' } } },
    });
    expect(again.body.data).toMatchObject({ sendTestAlert: { id: '2' } });
    expect(missing.body.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND', id: '99' });
    expect(malformed.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'ruleId' });
    expect(await t.db.alert.findMany({ select: { subject: true, details: true }, orderBy: { id: 'asc' } })).toEqual([
      { subject: 'test', details: { test: true, sentBy: 'admin-alice' } }, { subject: 'test', details: { test: true, sentBy: 'admin-alice' } },
    ]);
    expect(await t.db.alertThrottle.count()).toBe(0);
  });
});

describe('alert history', () => {
  const ALERTS = `query ($filter: AlertFilter, $first: Int, $after: String) {
    alerts(filter: $filter, first: $first, after: $after) {
      edges { node { id rule { name } ruleName trigger subject summary deliveryStatus attempts lastError createdAt } }
      pageInfo { hasNextPage endCursor }
    }
  }`;

  it('pages the history newest first, filtered, with rule, subject and delivery state', async () => {
    await execute(admin, CREATE, { input: { ...VALID, name: 'groups', trigger: 'NEW_GROUP', threshold: undefined } });
    await execute(admin, CREATE, { input: { ...VALID, name: 'redrives', trigger: 'REDRIVE_PAUSED', threshold: undefined } });
    for (const id of [1, 2, 3]) await raiseAlert(t.db, { trigger: 'NEW_GROUP', subjectId: id, summary: `new group ${id}` });
    await raiseAlert(t.db, { trigger: 'REDRIVE_PAUSED', subjectId: 8, summary: 'redrive 8 paused: 40% failures' });
    await t.db.alert.update({ where: { id: 1n }, data: { deliveryStatus: 'FAILED', attempts: 12, lastError: 'HTTP 500' } });

    const first = await execute<{ alerts: { edges: { node: Record<string, unknown> }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } }>(
      admin, ALERTS, { filter: { triggers: ['NEW_GROUP'] }, first: 2 });
    expect(first.body.data?.alerts.edges.map((e) => e.node.subject)).toEqual(['group:3', 'group:2']);
    expect(first.body.data?.alerts.pageInfo.hasNextPage).toBe(true);
    const next = await execute<typeof first.body.data & object>(admin, ALERTS, {
      filter: { triggers: ['NEW_GROUP'] }, first: 2, after: first.body.data?.alerts.pageInfo.endCursor,
    });
    expect(next.body.data?.alerts.edges.map((e) => e.node)).toEqual([{
      id: '1', rule: { name: 'groups' }, ruleName: 'groups', trigger: 'NEW_GROUP', subject: 'group:1', summary: 'new group 1',
      deliveryStatus: 'FAILED', attempts: 12, lastError: 'HTTP 500', createdAt: expect.any(String),
    }]);

    const viewerSeesRule = await execute(viewer, '{ alerts(first: 1) { edges { node { ruleName rule { targetUrl } } } } }');
    expect(viewerSeesRule.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const failed = await execute(viewer, ALERTS.replace('rule { name } ', ''), { filter: { deliveryStatuses: ['FAILED'] } });
    const bySubject = await execute(admin, ALERTS, { filter: { subject: 'redrive:8', ruleId: '2' } });
    expect(JSON.stringify(failed.body)).toContain('"subject":"group:1"');
    expect((bySubject.body.data as { alerts: { edges: { node: { summary: string } }[] } }).alerts.edges.map((e) => e.node.summary))
      .toEqual(['redrive 8 paused: 40% failures']);
  });

  it('names the error group of a group alert (event type, kind, signature), and null for other subjects', async () => {
    await execute(admin, CREATE, { input: { ...VALID, name: 'groups', trigger: 'NEW_GROUP', threshold: undefined } });
    await execute(admin, CREATE, { input: { ...VALID, name: 'redrives', trigger: 'REDRIVE_PAUSED', threshold: undefined } });
    await t.handle.pool.query(`insert into dead_letters (event_type, error_kind, error_message, status) values
      ('invoice.sent', 'DOWNSTREAM_API', 'SMTP relay refused', 'EXHAUSTED'), ('order.placed', 'VALIDATION', '', 'EXHAUSTED')`);
    // The service's folder raises NEW_GROUP for each new group; here the test folds.
    await foldErrorGroups(t.db, 1000);
    await raiseAlert(t.db, { trigger: 'REDRIVE_PAUSED', subjectId: 8, summary: 'redrive 8 paused' });

    const { body } = await execute<{ alerts: { edges: { node: { subject: string; errorGroup: unknown } }[] } }>(admin,
      '{ alerts { edges { node { subject errorGroup { id eventType errorKind signature } } } } }');
    const groups = await t.handle.pool.query(`select id::text, event_type from error_groups order by event_type`);
    const idOf = (type: string) => groups.rows.find((r) => r.event_type === type)!.id as string;
    expect(body.errors).toBeUndefined();
    expect(body.data?.alerts.edges.map((e) => e.node)).toEqual(expect.arrayContaining([
      { subject: `group:${idOf('invoice.sent')}`, errorGroup: { id: idOf('invoice.sent'), eventType: 'invoice.sent', errorKind: 'DOWNSTREAM_API', signature: 'SMTP relay refused' } },
      { subject: `group:${idOf('order.placed')}`, errorGroup: { id: idOf('order.placed'), eventType: 'order.placed', errorKind: 'VALIDATION', signature: '' } },
      { subject: 'redrive:8', errorGroup: null },
    ]));
    expect(body.data?.alerts.edges).toHaveLength(3);
  });
});
