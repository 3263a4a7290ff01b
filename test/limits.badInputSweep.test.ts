// The bad-input sweep: every query and mutation called with malformed ids, oversize payloads,
// illegal transitions, the wrong role or no key, over-limit query shapes, SQL-looking strings and
// invalid cursors. Each must answer with its coded error (or, for SQL-looking strings used as
// data, an honest empty answer) and leave every row of every Lazarus table byte-identical.
import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createApiKeyAuthenticator } from '../src/api/auth/apiKeys.ts';
import { parseApiKeys } from '../src/config.ts';
import { DEFAULT_WRITE_CONFIG } from '../src/domain/writeConfig.ts';
import { encodeCursor } from '../src/live/changeCursor.ts';
import { createGraphQLServer } from '../src/api/server.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { execute, type GraphQLResponse } from './helpers/graphql.ts';
import { subscribeSse } from './helpers/sse.ts';
import { everyTableDigest } from './helpers/writes.ts';

const t = useTestDatabase();
const TOKENS = { viewer: 'viewer-token-0123456789', operator: 'operator-token-0123456789', admin: 'admin-token-0123456789abc' };
const authenticate = createApiKeyAuthenticator(
  parseApiKeys(`dash:viewer:${TOKENS.viewer},ops:operator:${TOKENS.operator},root:admin:sha256=${createHash('sha256').update(TOKENS.admin).digest('hex')}`),
);
type Caller = keyof typeof TOKENS | 'none' | 'wrong-key';
const headersFor = (as: Caller): Record<string, string> =>
  as === 'none' ? {} : { authorization: `Bearer ${as === 'wrong-key' ? 'not-a-key-0123456789abcdef' : TOKENS[as]}` };

const server = () =>
  createGraphQLServer({
    db: t.db,
    logger: pino({ level: 'silent' }),
    graphiql: false,
    authenticate,
    isReady: async () => true,
    // The rate limiter is off: it counts refused mutations too (by design), which is a write.
    http: { introspection: false, mutationsPerMinute: 0 },
    writeConfig: { ...DEFAULT_WRITE_CONFIG, allowedEventTypes: ['order.placed'] },
  });

const SQLISH = "'; drop table dead_letters; --";
const HUGE = 'x'.repeat(300 * 1024);
const R = '__typename ... on MutationError { code }';
const BULK = `{ ${R} }`;

interface Case {
  name: string;
  as?: Caller;
  query: string;
  variables?: Record<string, unknown>;
  /** The error code; OK means an ordinary answer (SQL-looking strings used as data). */
  code: string;
}

function cases(ids: { pending: string; resolved: string; processing: string; redrive: string }): Case[] {
  const mutations: [string, string, 'operator' | 'admin'][] = [
    ['recordDeadLetter', `recordDeadLetter(input: { eventType: "order.placed", payload: {} }) { ${R} }`, 'operator'],
    ['recordDeadLetters', `recordDeadLetters(inputs: [{ eventType: "order.placed", payload: {} }]) { ${R} }`, 'operator'],
    ['requeueDeadLetters', `requeueDeadLetters(input: { ids: ["${ids.pending}"] }) ${BULK}`, 'operator'],
    ['resolveDeadLetters', `resolveDeadLetters(input: { ids: ["${ids.pending}"], reason: "r" }) ${BULK}`, 'operator'],
    ['discardDeadLetters', `discardDeadLetters(input: { ids: ["${ids.pending}"], reason: "r" }) ${BULK}`, 'operator'],
    ['deleteDeadLetters', `deleteDeadLetters(input: { ids: ["${ids.pending}"] }) ${BULK}`, 'admin'],
    ['editDeadLetterPayload', `editDeadLetterPayload(input: { id: "${ids.pending}", payload: {} }) { ${R} }`, 'operator'],
    ['addDeadLetterNote', `addDeadLetterNote(input: { id: "${ids.pending}", note: "n" }) { ${R} }`, 'operator'],
    ['pauseRedrive', `pauseRedrive(id: "${ids.redrive}") { ${R} }`, 'operator'],
    ['resumeRedrive', `resumeRedrive(id: "${ids.redrive}") { ${R} }`, 'operator'],
    ['cancelRedrive', `cancelRedrive(id: "${ids.redrive}") { ${R} }`, 'operator'],
    ['upsertRetryPolicy', `upsertRetryPolicy(input: { eventType: "order.placed", maxAttempts: 3 }) { eventType }`, 'admin'],
    ['pauseEventType', `pauseEventType(eventType: "order.placed") { eventType }`, 'admin'],
    ['resumeEventType', `resumeEventType(eventType: "order.placed") { eventType }`, 'admin'],
  ];
  const queries: [string, string][] = [
    ['deadLetter', `{ deadLetter(id: "${ids.pending}") { id } }`],
    ['deadLetters', '{ deadLetters { totalCount } }'],
    ['deadLetterStats', '{ deadLetterStats { total } }'],
    ['redrive', `{ redrive(id: "${ids.redrive}") { id } }`],
    ['redrives', '{ redrives { id } }'],
    ['retryPolicies', '{ retryPolicies { eventType } }'],
  ];
  const roles: Case[] = [
    ...mutations.map(([op, field]) => ({ name: `${op} as a viewer`, as: 'viewer' as const, query: `mutation { ${field} }`, code: 'FORBIDDEN' })),
    ...mutations.filter(([, , role]) => role === 'admin').map(([op, field]) => ({ name: `${op} as an operator`, as: 'operator' as const, query: `mutation { ${field} }`, code: 'FORBIDDEN' })),
    ...mutations.map(([op, field]) => ({ name: `${op} without a key`, as: 'none' as const, query: `mutation { ${field} }`, code: 'UNAUTHENTICATED' })),
    ...mutations.map(([op, field]) => ({ name: `${op} with a wrong key`, as: 'wrong-key' as const, query: `mutation { ${field} }`, code: 'UNAUTHENTICATED' })),
    ...queries.map(([op, query]) => ({ name: `${op} without a key`, as: 'none' as const, query, code: 'UNAUTHENTICATED' })),
  ];
  const badIds = ['abc', '-1', '0', '1.5', '9223372036854775808', '', SQLISH];
  const malformedIds: Case[] = badIds.flatMap((id) => [
    { name: `deadLetter(id: ${JSON.stringify(id)})`, query: 'query ($id: ID!) { deadLetter(id: $id) { id } }', variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `redrive(id: ${JSON.stringify(id)})`, query: 'query ($id: ID!) { redrive(id: $id) { id } }', variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `requeueDeadLetters(ids: [${JSON.stringify(id)}])`, query: `mutation ($id: ID!) { requeueDeadLetters(input: { ids: [$id] }) ${BULK} }`, variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `deleteDeadLetters(ids: [${JSON.stringify(id)}])`, query: `mutation ($id: ID!) { deleteDeadLetters(input: { ids: [$id] }) ${BULK} }`, variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `editDeadLetterPayload(id: ${JSON.stringify(id)})`, query: `mutation ($id: ID!) { editDeadLetterPayload(input: { id: $id, payload: {} }) { ${R} } }`, variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `addDeadLetterNote(id: ${JSON.stringify(id)})`, query: `mutation ($id: ID!) { addDeadLetterNote(input: { id: $id, note: "n" }) { ${R} } }`, variables: { id }, code: 'BAD_USER_INPUT' },
    { name: `cancelRedrive(id: ${JSON.stringify(id)})`, query: `mutation ($id: ID!) { cancelRedrive(id: $id) { ${R} } }`, variables: { id }, code: 'BAD_USER_INPUT' },
  ]);
  const oversize: Case[] = [
    { name: 'a request body over the cap', query: 'mutation ($p: JSON!) { editDeadLetterPayload(input: { id: "1", payload: $p }) { __typename } }', variables: { p: { s: 'y'.repeat(600 * 1024) } }, code: 'PAYLOAD_TOO_LARGE' },
    { name: 'recordDeadLetter with a payload over 256 KiB', query: `mutation ($p: JSON!) { recordDeadLetter(input: { eventType: "order.placed", payload: $p }) { ${R} } }`, variables: { p: { s: HUGE } }, code: 'VALIDATION' },
    { name: 'recordDeadLetters with one payload over 256 KiB', query: `mutation ($p: JSON!) { recordDeadLetters(inputs: [{ eventType: "order.placed", payload: {} }, { eventType: "order.placed", payload: $p }]) { ${R} } }`, variables: { p: { s: HUGE } }, code: 'VALIDATION' },
    { name: 'recordDeadLetters with 1,001 inputs', query: `mutation ($inputs: [RecordDeadLetterInput!]!) { recordDeadLetters(inputs: $inputs) { ${R} } }`, variables: { inputs: Array.from({ length: 1001 }, () => ({ eventType: 'order.placed', payload: {} })) }, code: 'VALIDATION' },
    { name: 'editDeadLetterPayload with a payload over 256 KiB', query: `mutation ($p: JSON!) { editDeadLetterPayload(input: { id: "${ids.pending}", payload: $p }) { ${R} } }`, variables: { p: { s: HUGE } }, code: 'VALIDATION' },
    { name: 'recordDeadLetter with headers that are not an object', query: `mutation { recordDeadLetter(input: { eventType: "order.placed", payload: {}, headers: [1] }) { ${R} } }`, code: 'VALIDATION' },
    { name: 'recordDeadLetter with an empty event type', query: `mutation { recordDeadLetter(input: { eventType: "", payload: {} }) { ${R} } }`, code: 'VALIDATION' },
    { name: 'resolveDeadLetters with a reason over 2,000 characters', query: `mutation ($r: String!) { resolveDeadLetters(input: { ids: ["${ids.pending}"], reason: $r }) ${BULK} }`, variables: { r: 'r'.repeat(2001) }, code: 'VALIDATION' },
    { name: 'discardDeadLetters with an empty reason', query: `mutation { discardDeadLetters(input: { ids: ["${ids.pending}"], reason: "" }) ${BULK} }`, code: 'VALIDATION' },
    { name: 'requeueDeadLetters with 1,001 ids', query: `mutation ($ids: [ID!]) { requeueDeadLetters(input: { ids: $ids }) ${BULK} }`, variables: { ids: Array.from({ length: 1001 }, (_, i) => String(i + 1)) }, code: 'VALIDATION' },
    { name: 'requeueDeadLetters with both ids and a filter', query: `mutation { requeueDeadLetters(input: { ids: ["${ids.pending}"], filter: {} }) ${BULK} }`, code: 'VALIDATION' },
    { name: 'requeueDeadLetters with neither ids nor a filter', query: `mutation { requeueDeadLetters(input: {}) ${BULK} }`, code: 'VALIDATION' },
    { name: 'deadLetters(first: 501)', query: '{ deadLetters(first: 501) { totalCount } }', code: 'BAD_USER_INPUT' },
    { name: 'an unknown enum value in a variable', query: 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount } }', variables: { f: { statuses: ['EXPLODED'] } }, code: 'BAD_USER_INPUT' },
  ];
  const transitions: Case[] = [
    { name: 'resolve an already RESOLVED event', query: `mutation { resolveDeadLetters(input: { ids: ["${ids.resolved}"], reason: "again" }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'discard a RESOLVED event', query: `mutation { discardDeadLetters(input: { ids: ["${ids.resolved}"], reason: "r" }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'requeue a RESOLVED event without force', query: `mutation { requeueDeadLetters(input: { ids: ["${ids.resolved}"] }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'requeue a PROCESSING event, even with force', query: `mutation { requeueDeadLetters(input: { ids: ["${ids.processing}"], force: true }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'delete a PROCESSING event', query: `mutation { deleteDeadLetters(input: { ids: ["${ids.processing}"] }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'edit the payload of a PROCESSING event', query: `mutation { editDeadLetterPayload(input: { id: "${ids.processing}", payload: {} }) { ${R} } }`, code: 'CONFLICT' },
    { name: 'resolve with a stale expected version', query: `mutation { resolveDeadLetters(input: { ids: ["${ids.pending}"], reason: "r", expectedVersions: [7] }) ${BULK} }`, code: 'CONFLICT' },
    { name: 'edit with a stale expected version', query: `mutation { editDeadLetterPayload(input: { id: "${ids.pending}", payload: {}, expectedVersion: 7 }) { ${R} } }`, code: 'CONFLICT' },
    { name: 'one unknown id among known ones', query: `mutation { requeueDeadLetters(input: { ids: ["${ids.pending}", "999999"] }) ${BULK} }`, code: 'NOT_FOUND' },
    { name: 'a note on an unknown event', query: `mutation { addDeadLetterNote(input: { id: "999999", note: "n" }) { ${R} } }`, code: 'NOT_FOUND' },
    { name: 'pause a COMPLETED redrive', query: `mutation { pauseRedrive(id: "${ids.redrive}") { ${R} } }`, code: 'CONFLICT' },
    { name: 'resume a COMPLETED redrive', query: `mutation { resumeRedrive(id: "${ids.redrive}") { ${R} } }`, code: 'CONFLICT' },
    { name: 'cancel a COMPLETED redrive', query: `mutation { cancelRedrive(id: "${ids.redrive}") { ${R} } }`, code: 'CONFLICT' },
    { name: 'cancel an unknown redrive', query: `mutation { cancelRedrive(id: "999999") { ${R} } }`, code: 'NOT_FOUND' },
  ];
  const node = 'id eventType queue source status attempts payload headers createdAt updatedAt nextAttemptAt version error { kind message stack } deliveryAttempts { id attemptNumber outcome statusCode durationMs startedAt finishedAt errorMessage }';
  const shapes: Case[] = [
    { name: 'a query nested deeper than the limit', query: '{ deadLetters { edges { node { deliveryAttempts { a { b { c { d { e } } } } } } } } }', code: 'GRAPHQL_VALIDATION_FAILED' },
    { name: 'more aliases than the limit', query: `{ ${Array.from({ length: 11 }, (_, i) => `a${i}: deadLetters { totalCount }`).join(' ')} }`, code: 'GRAPHQL_VALIDATION_FAILED' },
    { name: 'a query over the cost limit', query: `{ deadLetters(first: 500) { edges { node { ${node} } } } }`, code: 'GRAPHQL_VALIDATION_FAILED' },
    { name: 'a query over the token limit', query: `{ ${Array.from({ length: 2100 }, () => '__typename').join(' ')} }`, code: 'GRAPHQL_PARSE_FAILED' },
    { name: 'introspection when it is off', query: '{ __schema { types { name } } }', code: 'GRAPHQL_VALIDATION_FAILED' },
    { name: 'a field that does not exist', query: '{ deadLetters { totalCount secret } }', code: 'GRAPHQL_VALIDATION_FAILED' },
    { name: 'eleven aliased mutations (over the alias limit): none runs', query: `mutation { ${Array.from({ length: 11 }, (_, i) => `m${i}: addDeadLetterNote(input: { id: "${ids.pending}", note: "n" }) { __typename }`).join(' ')} }`, code: 'GRAPHQL_VALIDATION_FAILED' },
  ];
  const sqlish: Case[] = [
    { name: 'a SQL-looking event type in a filter is only data', query: 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount } }', variables: { f: { eventTypes: [SQLISH], errorText: SQLISH, queues: [SQLISH] } }, code: 'OK' },
    { name: 'a SQL-looking event type for a producer outside the allow-list', query: `mutation ($t: String!) { recordDeadLetter(input: { eventType: $t, payload: {} }) { ${R} } }`, variables: { t: SQLISH }, code: 'VALIDATION' },
    { name: 'a SQL-looking reason for an unknown event', query: `mutation ($r: String!) { resolveDeadLetters(input: { ids: ["999999"], reason: $r }) ${BULK} }`, variables: { r: SQLISH }, code: 'NOT_FOUND' },
    { name: 'a SQL-looking page cursor', query: 'query ($a: String) { deadLetters(after: $a) { totalCount } }', variables: { a: SQLISH }, code: 'BAD_USER_INPUT' },
  ];
  const cursors: Case[] = [
    { name: 'a garbage page cursor', query: 'query ($a: String) { deadLetters(first: 5, after: $a) { totalCount } }', variables: { a: 'bm90LWEtY3Vyc29y' }, code: 'BAD_USER_INPUT' },
    { name: 'a change cursor used as a page cursor', query: 'query ($a: String) { deadLetters(first: 5, after: $a) { totalCount } }', variables: { a: encodeCursor({ xid: 5n, changeId: 5n }) }, code: 'BAD_USER_INPUT' },
    { name: 'first and last together', query: '{ deadLetters(first: 5, last: 5) { totalCount } }', code: 'BAD_USER_INPUT' },
  ];
  const jsonText: Case[] = [
    { name: 'an escaped NUL in a filter\'s payloadContains', query: 'query ($f: DeadLetterFilter) { deadLetters(filter: $f) { totalCount } }', variables: { f: { payloadContains: '{"a":"\\u0000"}' } }, code: 'BAD_USER_INPUT' },
    { name: 'a lone surrogate escape in a dry-run requeue\'s payloadPath.equals', query: `mutation ($f: DeadLetterFilter) { requeueDeadLetters(input: { filter: $f, dryRun: true }) ${BULK} }`, variables: { f: { payloadPath: { path: ['a'], equals: '"\\ud800"' } } }, code: 'BAD_USER_INPUT' },
  ];
  return [...roles, ...malformedIds, ...oversize, ...transitions, ...shapes, ...sqlish, ...cursors, ...jsonText];
}

/** The code a response carries: the first GraphQL error's, a typed result's, or OK. */
function codeOf(status: number, body: GraphQLResponse): string {
  if (body.errors?.length) return String(body.errors[0]!.extensions?.code ?? `no code (HTTP ${status}): ${body.errors[0]!.message}`);
  const first = body.data && Object.values(body.data)[0];
  if (first && typeof first === 'object' && 'code' in first) return String((first as { code: unknown }).code);
  return 'OK';
}

describe('the bad-input sweep', () => {
  it('answers every bad input to every operation with its coded error and changes no row of any table', async () => {
    const pending = await insertDeadLetter(t.db);
    const resolved = await insertDeadLetter(t.db, { status: 'RESOLVED', resolvedBy: 'ops', nextAttemptAt: null });
    const processing = await insertDeadLetter(t.db);
    await t.db.deadLetter.update({ where: { id: processing.id }, data: { status: 'PROCESSING', leaseOwner: 'w', leaseToken: '00000000-0000-0000-0000-000000000001', leaseExpiresAt: new Date(Date.now() + 600_000) } });
    const redrive = await t.db.redrive.create({ data: { status: 'COMPLETED', filter: {}, ratePerSecond: 10, createdBy: 'ops', finishedAt: new Date() } });
    await t.db.retryPolicy.upsert({ where: { eventType: 'order.placed' }, create: { eventType: 'order.placed', maxAttempts: 5 }, update: {} });
    const all = cases({ pending: String(pending.id), resolved: String(resolved.id), processing: String(processing.id), redrive: String(redrive.id) });
    const yoga = server();
    const before = await everyTableDigest(t.handle);

    const outcomes = [];
    for (const c of all) {
      const { status, body } = await execute(yoga, c.query, c.variables ?? {}, headersFor(c.as ?? 'admin'));
      outcomes.push({ name: c.name, code: codeOf(status, body), tablesUnchanged: (await everyTableDigest(t.handle)) === before });
    }
    expect(outcomes).toEqual(all.map((c) => ({ name: c.name, code: c.code, tablesUnchanged: true })));
    expect(outcomes.length).toBeGreaterThan(140);
  });

  it.each(['', 'abc', encodeCursor({ xid: 1n, changeId: 1n }).slice(0, -1) + '!', "'; drop table dead_letters; --", Buffer.from('c1:1:99999999999999999999').toString('base64url')])(
    'refuses the change cursor %j for deadLetterChanged with BAD_USER_INPUT and writes nothing',
    async (after) => {
      await insertDeadLetter(t.db);
      const yoga = server();
      const before = await everyTableDigest(t.handle);
      const stream = await subscribeSse(
        'http://lazarus/graphql',
        'subscription ($after: String) { deadLetterChanged(after: $after) { cursor } }',
        { after },
        headersFor('viewer'),
        (url, init) => Promise.resolve(yoga.fetch(url, init)),
      );
      try {
        const message = await stream.next();
        expect(message.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argument: 'after' });
      } finally {
        stream.close();
      }
      expect(await everyTableDigest(t.handle)).toBe(before);
    },
  );
});
