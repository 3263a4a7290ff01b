// The local RabbitMQ (127.0.0.1:5672, guest/guest; scripts/startBrokers.sh starts it when down),
// with a vhost of the test's own: created with rabbitmqctl before and deleted after, so queues,
// exchanges and messages never cross between tests or runs. rabbitmqctl takes about a second per
// call, so `useRabbitVhost` makes one vhost per test file; each test names its own queues.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll } from 'vitest';

const run = promisify(execFile);

export const RABBITMQ_HOST = process.env.TEST_RABBITMQ_HOST ?? '127.0.0.1:5672';

export interface RabbitVhost {
  /** The vhost's name (no slash), e.g. `lazarus_t_3f2a…`. */
  readonly name: string;
  /** amqp://guest:guest@host/<vhost>: the URL a policy would store. */
  readonly url: string;
  /** An amqplib channel on the vhost, for declaring and reading in tests. */
  readonly channel: Channel;
  /** A new queue bound to `exchange` (declared as direct) with `routingKey`; its name is unique. */
  queueOn(exchange: string, routingKey: string): Promise<string>;
  /** The next message on `queue`, waiting until one arrives (acked). */
  nextMessage(queue: string): Promise<ConsumeMessage>;
}

export async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  return stdout;
}

export async function createVhost(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `lazarus_t_${randomBytes(6).toString('hex')}`;
  await rabbitmqctl('add_vhost', name);
  await rabbitmqctl('set_permissions', '-p', name, 'guest', '.*', '.*', '.*');
  return { name, url: `amqp://guest:guest@${RABBITMQ_HOST}/${name}`, drop: async () => void (await rabbitmqctl('delete_vhost', name)) };
}

/** A vhost for this test file, with a client on it; both removed after the file. */
export function useRabbitVhost(): RabbitVhost {
  let vhost: Awaited<ReturnType<typeof createVhost>> | undefined;
  let model: ChannelModel | undefined;
  let channel: Channel | undefined;
  let queues = 0;
  beforeAll(async () => {
    vhost = await createVhost();
    model = await connect(vhost.url);
    channel = await model.createChannel();
    await channel.prefetch(1);
  }, 60_000);
  afterAll(async () => {
    await model?.close().catch(() => {});
    await vhost?.drop();
  }, 60_000);

  return {
    get name() {
      return vhost!.name;
    },
    get url() {
      return vhost!.url;
    },
    get channel() {
      return channel!;
    },
    async queueOn(exchange, routingKey) {
      const queue = `q${++queues}_${randomBytes(3).toString('hex')}`;
      await channel!.assertQueue(queue, { durable: true });
      if (exchange !== '') {
        await channel!.assertExchange(exchange, 'direct', { durable: true });
        await channel!.bindQueue(queue, exchange, routingKey);
      }
      return queue;
    },
    nextMessage: (queue) => new Promise<ConsumeMessage>((resolve, reject) => {
      let isDone = false;
      channel!.consume(queue, (message) => {
        if (!message) return reject(new Error(`consumer of ${queue} was cancelled`));
        // Prefetch 1, but one more may come between the ack and the cancel: it goes back.
        if (isDone) return channel!.nack(message, false, true);
        isDone = true;
        channel!.ack(message);
        void channel!.cancel(message.fields.consumerTag).then(() => resolve(message), reject);
      }).catch(reject);
    }),
  };
}
