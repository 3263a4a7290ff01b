// Fault: `kill -9` of the service in the middle of consuming a RabbitMQ dead-letter queue through a
// bridge (declared with LAZARUS_BRIDGES). The unacked messages go back to the queue; a new process
// takes them again. Every published message must be a row exactly once: none lost (the ack follows
// the commit), none twice (a message committed and not acked comes back with the same bytes and
// x-death, so the same dedupe key).
import amqp from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { bridgeCounts, rowsByMessageId, startBridgeService } from '../helpers/brokerFaults.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { scaled, waitFor } from '../helpers/faults.ts';
import { declareDeadLetterSetup, rejectMessages, useRabbitVhost } from '../helpers/rabbitVhost.ts';
import type { ServiceProcess } from '../helpers/serviceProcess.ts';

const MESSAGES = scaled(20_000, 2_000);

const t = useTestDatabase();
const vhost = useRabbitVhost();
const services: ServiceProcess[] = [];
let admin: amqp.ChannelModel | undefined;
// Registered after the vhost's hooks, so it runs before the vhost is deleted.
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop('SIGKILL')));
  await admin?.close().catch(() => {});
});

async function queueDepth(queue: string): Promise<{ messageCount: number; consumerCount: number }> {
  const channel = await admin!.createChannel();
  try {
    return await channel.checkQueue(queue);
  } finally {
    await channel.close();
  }
}

describe('kill -9 while a bridge consumes a RabbitMQ dead-letter queue', () => {
  it('records every message exactly once after a restart: 0 lost, 0 twice', async () => {
    const names = { work: 'orders', dlx: 'orders.dlx', dlq: 'orders.dlq', exchange: 'shop' };
    const { connection, channel } = await declareDeadLetterSetup(vhost.url, names);
    admin = connection;
    for (let n = 1; n <= MESSAGES; n++) {
      channel.publish(names.exchange, 'order.placed', Buffer.from(JSON.stringify({ n })), { contentType: 'application/json', messageId: `m-${n}`, headers: { 'x-test-n': n } });
    }
    await rejectMessages(channel, names.work, MESSAGES);
    // Dead-lettering is asynchronous: the DLQ fills a moment after the rejects.
    await waitFor(async () => (await queueDepth(names.dlq)).messageCount === MESSAGES, 60_000, 'every message in the dead-letter queue');

    const bridge = { name: 'orders', url: vhost.url, queue: names.dlq, prefetch: 100 };
    const victim = await startBridgeService(t.url, bridge);
    services.push(victim);
    const startedAt = Date.now();
    await waitFor(async () => (await rowsByMessageId(t.db)).rows >= MESSAGES / 3, 120_000, 'a third recorded');
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBeNull();
    const killedAt = Date.now();
    // RabbitMQ returns the dead consumer's unacked messages to the queue once it sees the socket close.
    await waitFor(async () => (await queueDepth(names.dlq)).consumerCount === 0, 30_000, 'the dead consumer gone');
    const atKill = await rowsByMessageId(t.db);
    const waitingAfterKill = (await queueDepth(names.dlq)).messageCount;

    const second = await startBridgeService(t.url, bridge);
    services.push(second);
    const restartedAt = Date.now();
    await waitFor(async () => (await rowsByMessageId(t.db)).distinct === MESSAGES, 180_000, 'every message recorded');
    const doneAt = Date.now();
    await waitFor(async () => (await queueDepth(names.dlq)).messageCount === 0 && (await bridgeCounts(second)).received === waitingAfterKill, 30_000, 'the queue drained and acked');

    const final = await rowsByMessageId(t.db);
    const counts = await bridgeCounts(second);
    const lost = MESSAGES - final.distinct;
    const twice = final.rows - final.distinct;
    console.log(`bridge kill -9 (${MESSAGES} messages, prefetch ${bridge.prefetch}): killed after ${killedAt - startedAt} ms with ${atKill.rows} recorded, `
      + `${waitingAfterKill} back in the queue; the new process took ${counts.received}, found ${counts.duplicates} already recorded (committed, not acked), `
      + `and recorded the rest ${doneAt - restartedAt} ms after it started; lost ${lost}, recorded twice ${twice}`);
    expect({ lost, twice, rows: final.rows }).toEqual({ lost: 0, twice: 0, rows: MESSAGES });
    expect(counts).toMatchObject({ state: 'CONNECTED', recorded: MESSAGES - atKill.rows, duplicates: waitingAfterKill - (MESSAGES - atKill.rows), poison: 0, refused: 0 });
    // Every row is its own message, as published: its message-id and its header agree.
    const mismatched = await t.db.$queryRaw<{ n: number }[]>`
      select count(*)::int as n from dead_letters
       where headers->'properties'->>'messageId' <> 'm-' || (headers->'headers'->>'x-test-n') or payload->>'n' <> headers->'headers'->>'x-test-n'`;
    expect(mismatched[0]!.n).toBe(0);
    expect(await second.stop()).toBe(0);
  }, 600_000);
});
