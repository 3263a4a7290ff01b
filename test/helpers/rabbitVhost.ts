// Each RabbitMQ test file gets its own vhost on the local broker (127.0.0.1:5672, guest/guest),
// deleted after the file. rabbitmqctl talks to the broker; a vhost holds its own queues and
// exchanges, so files running side by side never see each other's messages.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { afterAll, beforeAll } from 'vitest';

const run = promisify(execFile);
export const RABBITMQ_HOST = process.env.RABBITMQ_HOST ?? '127.0.0.1:5672';

export interface TestVhost {
  readonly name: string;
  /** amqp://guest:guest@host/<vhost> */
  readonly url: string;
}

export function useRabbitVhost(): TestVhost {
  const name = `lz_${randomBytes(6).toString('hex')}`;
  beforeAll(async () => {
    await run('rabbitmqctl', ['add_vhost', name]);
    await run('rabbitmqctl', ['set_permissions', '-p', name, 'guest', '.*', '.*', '.*']);
  }, 60_000);
  afterAll(async () => {
    await run('rabbitmqctl', ['delete_vhost', name]);
  }, 60_000);
  return { name, url: `amqp://guest:guest@${RABBITMQ_HOST}/${encodeURIComponent(name)}` };
}

/** Closes every client connection to the vhost (as a broker restart would), waiting until they are gone. */
export async function closeVhostConnections(vhost: string): Promise<void> {
  await run('rabbitmqctl', ['close_all_connections', '-p', vhost, 'test: connection closed']);
}

/**
 * A work queue whose rejected messages go to a dead-letter exchange, and the queue bound to it that
 * a bridge consumes: what a user declares. Returns a channel on the work queue's side.
 */
export async function declareDeadLetterSetup(url: string, p: { work: string; dlx: string; dlq: string; exchange: string; parking?: string }) {
  const connection = await amqp.connect(url);
  const channel = await connection.createChannel();
  await channel.assertExchange(p.exchange, 'topic', { durable: false });
  await channel.assertExchange(p.dlx, 'fanout', { durable: false });
  // The bridge's queue may have its own dead-letter exchange: where the bridge's refusals go.
  if (p.parking) {
    await channel.assertExchange(`${p.parking}.x`, 'fanout', { durable: false });
    await channel.assertQueue(p.parking, { durable: false });
    await channel.bindQueue(p.parking, `${p.parking}.x`, '');
  }
  await channel.assertQueue(p.dlq, { durable: false, ...(p.parking && { arguments: { 'x-dead-letter-exchange': `${p.parking}.x` } }) });
  await channel.bindQueue(p.dlq, p.dlx, '');
  await channel.assertQueue(p.work, { durable: false, arguments: { 'x-dead-letter-exchange': p.dlx } });
  await channel.bindQueue(p.work, p.exchange, '#');
  return { connection, channel };
}

/** Consumes `count` messages from the work queue and rejects each (nack, no requeue): they die into the DLX. */
export async function rejectMessages(channel: amqp.Channel, queue: string, count: number): Promise<void> {
  let left = count;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const { consumerTag } = await channel.consume(queue, (m) => {
    if (!m) return;
    channel.nack(m, false, false);
    if (--left === 0) done();
  });
  await finished;
  await channel.cancel(consumerTag);
}
