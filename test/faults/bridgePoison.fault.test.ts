// Fault: poison messages through the RabbitMQ bridge of a running service process. A body claimed
// as JSON that is not UTF-8, a body over the 256 KiB payload cap, and broken headers (a value over
// the 64 KiB headers cap once kept as JSON (50,000 bytes as base64), a NUL the jsonb column cannot hold, a byte-array value). The bridge never
// stops: the messages after them arrive. Each poison message is stored as what it is (bytes) or
// refused to the bridge queue's own dead-letter exchange, and GraphQL `bridges` and /metrics count it.
import amqp from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { bridgeCounts, metricLines, startBridgeService } from '../helpers/brokerFaults.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/faults.ts';
import { declareDeadLetterSetup, rejectMessages, useRabbitVhost } from '../helpers/rabbitVhost.ts';
import type { ServiceProcess } from '../helpers/serviceProcess.ts';

const AFTER = 50;

const t = useTestDatabase();
const vhost = useRabbitVhost();
let service: ServiceProcess | undefined;
let admin: amqp.ChannelModel | undefined;
afterAll(async () => {
  await service?.stop('SIGKILL');
  await admin?.close().catch(() => {});
});

describe('poison messages through a running bridge', () => {
  it('keeps going: stores bytes or refuses to the queue’s own DLX, and counts each by reason', async () => {
    const names = { work: 'orders', dlx: 'orders.dlx', dlq: 'orders.dlq', exchange: 'shop', parking: 'lazarus.parking' };
    const { connection, channel } = await declareDeadLetterSetup(vhost.url, names);
    admin = connection;
    service = await startBridgeService(t.url, { name: 'orders', url: vhost.url, queue: names.dlq });
    const publish = (body: Buffer | string, options: amqp.Options.Publish) =>
      channel.publish(names.exchange, 'order.placed', Buffer.isBuffer(body) ? body : Buffer.from(body), options);

    const notUtf8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xff, 0xfe, 0x7d]);
    const byteHeader = Buffer.from([0x00, 0xc3, 0x28, 0xff]);
    publish('{"step":"before"}', { contentType: 'application/json', messageId: 'before' });
    publish(notUtf8, { contentType: 'application/json', messageId: 'not-utf8' });
    publish(Buffer.alloc(300 * 1024, 0x61), { contentType: 'application/json', messageId: 'too-large' });
    publish('{"step":"huge header"}', { contentType: 'application/json', messageId: 'huge-header', headers: { blob: Buffer.alloc(50_000, 0xab) } });
    publish('{"step":"nul header"}', { contentType: 'application/json', messageId: 'nul-header', headers: { note: 'a\u0000b' } });
    publish('{"step":"byte header"}', { contentType: 'application/json', messageId: 'byte-header', headers: { raw: byteHeader } });
    for (let i = 0; i < AFTER; i++) publish(JSON.stringify({ step: 'after', i }), { contentType: 'application/json', messageId: `after-${i}` });
    const startedAt = Date.now();
    await rejectMessages(channel, names.work, 6 + AFTER);

    const stored = 3 + AFTER;
    await waitFor(async () => (await t.db.deadLetter.count()) === stored && (await bridgeCounts(service!)).refused === 3, 60_000, 'every message stored or refused');
    const tookMs = Date.now() - startedAt;
    const rows = await t.db.$queryRaw<{ mid: string; payload: unknown; headers: { headers: Record<string, unknown> } }[]>`
      select headers->'properties'->>'messageId' as mid, payload, headers from dead_letters order by id`;
    const byId = new Map(rows.map((r) => [r.mid, r]));
    expect([...byId.keys()].sort()).toEqual(['before', 'byte-header', 'not-utf8', ...Array.from({ length: AFTER }, (_, i) => `after-${i}`)].sort());
    expect(byId.get('not-utf8')!.payload).toEqual({ $binary: notUtf8.toString('base64'), contentType: 'application/json' });
    expect(byId.get('byte-header')!.headers.headers.raw).toEqual({ $binary: byteHeader.toString('base64') });

    // Refused, not lost: the three are in the parking queue, each still with its message-id.
    const parked = await drain(names.parking, 3);
    expect(parked.sort()).toEqual(['huge-header', 'nul-header', 'too-large']);

    const counts = await bridgeCounts(service);
    expect(counts).toMatchObject({ state: 'CONNECTED', received: 6 + AFTER, recorded: stored, duplicates: 0, refused: 3, poison: 4 });
    expect(counts.lastError).toMatch(/refused a message/);
    const poison = await metricLines(service, 'lazarus_bridge_poison_total');
    for (const [reason, n] of [['not_utf8', 1], ['too_large', 1], ['bad_headers', 2]] as const) {
      expect(poison).toContain(`lazarus_bridge_poison_total{bridge="orders",kind="rabbitmq",reason="${reason}"} ${n}`);
    }
    expect(await metricLines(service, 'lazarus_bridge_messages_total')).toEqual(expect.arrayContaining([
      `lazarus_bridge_messages_total{bridge="orders",kind="rabbitmq",outcome="refused"} 3`,
      `lazarus_bridge_messages_total{bridge="orders",kind="rabbitmq",outcome="recorded"} ${stored}`,
    ]));
    console.log(`bridge poison: ${6 + AFTER} messages (1 not UTF-8 as JSON, 1 over 256 KiB, 1 header over 64 KiB as JSON, 1 NUL header, 1 byte-array header, `
      + `${AFTER + 1} good) all handled in ${tookMs} ms: ${stored} stored (1 as bytes), 3 refused to the parking queue; counters ${JSON.stringify(counts)}; ${poison.join('; ')}`);
    expect(await service.stop()).toBe(0);
  }, 300_000);
});

/** Takes `count` messages off `queue` and returns their message-ids. */
async function drain(queue: string, count: number): Promise<string[]> {
  const channel = await admin!.createChannel();
  try {
    const ids: string[] = [];
    await waitFor(async () => (await channel.checkQueue(queue)).messageCount === count, 30_000, `${count} in ${queue}`);
    for (let i = 0; i < count; i++) {
      const m = await channel.get(queue, { noAck: true });
      if (m) ids.push(String(m.properties.messageId));
    }
    return ids;
  } finally {
    await channel.close();
  }
}
