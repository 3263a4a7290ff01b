// SSRF: a policy without allowPrivateTarget never reaches an address outside the public unicast
// ranges, however the address is spelled, at save time and at delivery (after DNS, per hop).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isPrivateAddress, isPrivateHost } from '../src/domain/targetAddress.ts';
import { createWebhookDeliver } from '../src/workers/targets/webhook.ts';
import { useTestDatabase } from './helpers/db.ts';
import { execute, testServer } from './helpers/graphql.ts';
import { startSink, type Sink } from './helpers/sink.ts';

const t = useTestDatabase();

// Each as a URL host, the way a policy's targetUrl carries it.
const PRIVATE_HOSTS = [
  // loopback, in every IPv4 spelling the URL parser accepts
  '127.0.0.1', '127.1', '2130706433', '0177.0.0.1', '0x7f.0.0.1', '0x7f000001', '017700000001', '127.255.255.254',
  // IPv6 loopback and IPv4 loopback carried in IPv6
  '[::1]', '[0:0:0:0:0:0:0:1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:7f00:1]', '[::ffff:0:127.0.0.1]',
  '[64:ff9b::127.0.0.1]', '[2002:7f00:1::]', '[::127.0.0.1]',
  // private
  '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '0xa.0.0.1', '[::ffff:10.0.0.1]', '[::ffff:c0a8:101]',
  // link-local and cloud metadata
  '169.254.169.254', '169.254.0.1', '2852039166', '0251.0376.0251.0376', '[::ffff:169.254.169.254]', '[fe80::1]', '[fd00:ec2::254]',
  // CGNAT, ULA, unspecified, broadcast, multicast, reserved
  '100.64.0.1', '100.127.255.254', '[fc00::1]', '[fd12:3456::1]', '0.0.0.0', '0', '[::]', '255.255.255.255', '224.0.0.1', '[ff02::1]', '240.0.0.1',
  // Teredo whose client is loopback (the client address is stored inverted)
  '[2001:0:4136:e378:8000:63bf:80ff:fffe]',
  // names
  'localhost', 'LOCALHOST', 'api.localhost', 'metadata.google.internal', 'localhost.',
];
const PUBLIC_HOSTS = ['8.8.8.8', '1.1.1.1', '[2606:4700:4700::1111]', '[::ffff:8.8.8.8]', 'hooks.example.com', '100.63.255.255', '172.32.0.1'];

describe('classifying target addresses', () => {
  it.each(PRIVATE_HOSTS)('%s is private', (host) => {
    expect(isPrivateHost(new URL(`http://${host}:8080/hook`).hostname)).toBe(true);
  });

  it.each(PUBLIC_HOSTS)('%s is public', (host) => {
    expect(isPrivateHost(new URL(`http://${host}/hook`).hostname)).toBe(false);
  });

  it('judges resolved addresses (as DNS returns them, without brackets) the same way', () => {
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.1.2.3', 'fe80::1', '64:ff9b::a9fe:a9fe'].every(isPrivateAddress)).toBe(true);
    expect(['93.184.215.14', '2606:4700::6810:84e5'].some(isPrivateAddress)).toBe(false);
  });
});

describe('saving a policy', () => {
  const UPSERT = 'mutation ($input: UpsertRetryPolicyInput!) { upsertRetryPolicy(input: $input) { eventType } }';

  it.each(PRIVATE_HOSTS)('refuses a target at %s without allowPrivateTarget', async (host) => {
    const { body } = await execute(testServer(t.db), UPSERT, { input: { eventType: 'x', targetUrl: `http://${host}:8080/hook` } });

    expect(body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'targetUrl', reason: 'PRIVATE_TARGET' });
    expect(await t.db.retryPolicy.count({ where: { eventType: 'x' } })).toBe(0);
  });
});

describe('delivering', () => {
  let sink: Sink;
  beforeAll(async () => {
    sink = await startSink();
  });
  afterAll(() => sink.close());
  beforeEach(() => {
    sink.requests = [];
  });

  // A resolver under the test's control: `inside.example` is a public-looking name pointing at loopback.
  const fakeDns: typeof import('node:dns').lookup = ((hostname: string, options: object, callback: (...args: unknown[]) => void) => {
    const address = hostname === 'inside.example' ? '127.0.0.1' : hostname === 'mixed.example' ? null : hostname;
    const all = hostname === 'mixed.example' ? [{ address: '93.184.215.14', family: 4 }, { address: '::ffff:7f00:1', family: 6 }] : [{ address: address!, family: 4 }];
    callback(null, (options as { all?: boolean }).all ? all : all[0]!.address, all[0]!.family);
  }) as never;
  const deliver = createWebhookDeliver({ lookup: fakeDns });
  const event = { id: 1n, eventType: 'order.placed', queue: 'default', source: 'test', orderingKey: null, attempts: 1, occurredAt: new Date(), headers: {}, payload: {}, payloadJson: '{}' };
  const policyFor = (targetUrl: string, allowPrivateTarget = false) =>
    ({ targetKind: 'webhook', targetSettings: { url: targetUrl }, allowPrivateTarget, timeoutMs: 5_000, permanentStatusCodes: [400] }) as unknown as Parameters<typeof deliver>[1];
  const port = () => new URL(sink.url).port;

  it.each(['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '2130706433', '0x7f.1', 'localhost'])(
    'refuses %s as a permanent failure without sending anything',
    async (host) => {
      const result = await deliver(event as never, policyFor(`http://${host}:${port()}/hook`), new AbortController().signal);

      expect(result).toMatchObject({ ok: false, outcome: 'PERMANENT_FAILURE' });
      expect(sink.requests).toHaveLength(0);
    },
  );

  it.each(['inside.example', 'mixed.example'])('refuses %s, whose DNS answer includes loopback, in the connection itself', async (name) => {
    const result = await deliver(event as never, policyFor(`http://${name}:${port()}/hook`), new AbortController().signal);

    expect(result).toMatchObject({ ok: false, outcome: 'PERMANENT_FAILURE', errorMessage: expect.stringMatching(/resolves to private address/) });
    expect(sink.requests).toHaveLength(0);
  });

  it('delivers to a loopback target when the policy allows private targets', async () => {
    sink.respond = (_req, res) => res.writeHead(200).end('ok');

    const result = await deliver(event as never, policyFor(`http://[::ffff:127.0.0.1]:${port()}/hook`, true), new AbortController().signal);

    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(sink.requests).toHaveLength(1);
  });
});
