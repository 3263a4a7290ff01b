// Issue 32 item 1: a patch's work is bounded before it is done. The service runs as a child
// process with a 256 MB heap, so a patch that could grow a payload without bound (24 `copy from ""`
// operations double it 24 times) or compare quadratically (`test` of two 1,000-element arrays)
// would kill it; each must be answered with a coded refusal while the process stays up.
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { startService, type ServiceProcess } from './helpers/serviceProcess.ts';

const VIEWER = 'viewer-token-0123456789';
const ADMIN = 'admin-token-0123456789';
const t = useTestDatabase();
let service: ServiceProcess | undefined;
afterAll(async () => {
  await service?.stop('SIGKILL');
});

async function post(token: string, query: string, variables: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${service!.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return response.json();
}

async function writeState(): Promise<string> {
  const { rows } = await t.handle.pool.query<{ s: string }>(`select md5(
    coalesce((select string_agg(t::text, '|' order by id) from dead_letters_current t), '') || '#' ||
    coalesce((select string_agg(t::text, '|' order by id) from dead_letter_actions t), '') || '#' ||
    coalesce((select string_agg(t::text, '|' order by id) from transforms t), '')) as s`);
  return rows[0]!.s;
}

const PREVIEW = `query ($input: PreviewTransformInput!) { previewTransform(input: $input) {
  __typename ... on TransformPreview { matched changed failed failures { reason count } } } }`;
const APPLY = `mutation ($input: ApplyTransformInput!) { applyTransform(input: $input) {
  __typename ... on TransformNotApplicableError { code failed failures { reason count } } } }`;

describe('a patch that would exhaust memory', () => {
  it('is refused with a coded answer for a viewer (preview) and an admin (apply), and the service under a 256 MB heap stays up', async () => {
    service = await startService({
      DATABASE_URL: t.url,
      RETRY_ENABLED: 'false',
      NODE_OPTIONS: '--max-old-space-size=256',
      LAZARUS_API_KEYS: `dash:viewer:${VIEWER},root:admin:${ADMIN}`,
    });
    const event = await insertDeadLetter(t.db, { eventType: 'bomb', payload: { text: 'x'.repeat(1_000), list: Array.from({ length: 1_000 }, (_, i) => i) } });
    const filter = { eventTypes: ['bomb'] };
    const copyBomb = Array.from({ length: 24 }, (_, i) => ({ op: 'copy', from: '', path: `/c${i}` }));
    // The payload is ~6 KB: the copies add 6, 12, 24, … KB, and the sixth brings the total past 256 KiB.
    const copyRefusal = 'operation 5 (copy /c5): copying "" would bring what the patch adds to this payload past 262144 bytes';
    const before = await writeState();

    expect((await post(VIEWER, PREVIEW, { input: { filter, patch: copyBomb } })).data.previewTransform).toEqual({
      __typename: 'TransformPreview', matched: 1, changed: 0, failed: 1, failures: [{ reason: copyRefusal, count: 1 }],
    });
    const quadraticTest = [{ op: 'test', path: '/list', value: Array.from({ length: 1_000 }, (_, i) => -i) }];
    expect((await post(VIEWER, PREVIEW, { input: { filter, patch: quadraticTest } })).data.previewTransform).toMatchObject({
      failed: 1, failures: [{ reason: 'operation 0 (test /list): test failed, the value differs', count: 1 }],
    });
    for (const skipFailing of [false, true]) {
      expect((await post(ADMIN, APPLY, { input: { filter, patch: copyBomb, skipFailing } })).data.applyTransform).toEqual({
        __typename: 'TransformNotApplicableError', code: 'VALIDATION', failed: 1, failures: [{ reason: copyRefusal, count: 1 }],
      });
    }

    expect(service.child.exitCode).toBeNull();
    expect(await post(VIEWER, `query ($id: ID!) { deadLetter(id: $id) { id } }`, { id: event.id.toString() })).toEqual({ data: { deadLetter: { id: event.id.toString() } } });
    expect(await writeState()).toBe(before);
  }, 60_000);
});
