// Shared AMQP connections against the local RabbitMQ: one connection and confirm channel per URL,
// a reconnect after the socket drops (awaited through onConnect), backoff after a failed attempt,
// and credentials out of every error.
import type { ChannelModel } from 'amqplib';
import type { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { AmqpUnreachableError, createAmqpConnections, redact, type AmqpConnections } from '../src/workers/brokers/amqpConnections.ts';
import { useRabbitVhost } from './helpers/rabbitmq.ts';

const rabbit = useRabbitVhost();
let connections: AmqpConnections | undefined;
afterEach(() => connections?.close());

describe('shared AMQP connections', () => {
  it('gives every caller of one URL the same confirm channel, and extra channels on the same connection', async () => {
    connections = createAmqpConnections();
    const [a, b] = await Promise.all([connections.confirmChannel(rabbit.url), connections.confirmChannel(rabbit.url)]);
    const extra = await connections.openChannel(rabbit.url);

    expect(a).toBe(b);
    expect(extra).not.toBe(a);
    expect(extra.connection).toBe(a.connection);
    expect(connections.health()).toEqual([{ host: '127.0.0.1:5672', vhost: rabbit.name, state: 'CONNECTED', lastError: null, lastErrorAt: null }]);
  });

  it('sends the frames queued in one turn in one socket write', async () => {
    connections = createAmqpConnections();
    const channel = await connections.confirmChannel(rabbit.url);
    await channel.assertQueue('coalesced', { durable: false });
    const socket = (channel.connection as unknown as { stream: Writable }).stream;
    const calls = { _write: 0, _writev: 0 };
    for (const method of ['_write', '_writev'] as const) {
      const original = socket[method]!.bind(socket) as (...args: unknown[]) => void;
      socket[method] = (...args: unknown[]) => {
        calls[method] += 1;
        original(...args);
      };
    }

    await Promise.all(Array.from({ length: 20 }, (_, i) => new Promise<void>((resolve, reject) => {
      channel.publish('', 'coalesced', Buffer.from(`m${i}`), {}, (error: unknown) => (error ? reject(error as Error) : resolve()));
    })));

    // Without the cork, amqplib writes each publish on its own: 20 writes.
    expect(calls._write + calls._writev).toBeLessThanOrEqual(2);
    expect((await channel.checkQueue('coalesced')).messageCount).toBe(20);
  });

  it('reconnects in the background after the socket drops, and tells onConnect listeners', async () => {
    connections = createAmqpConnections({ initialDelayMs: 50 });
    const connected: ChannelModel[] = [];
    let reconnected!: () => void;
    const isReconnected = new Promise<void>((resolve) => (reconnected = resolve));
    connections.onConnect(rabbit.url, (model) => {
      connected.push(model);
      if (connected.length === 2) reconnected();
    });
    const channel = await connections.confirmChannel(rabbit.url);
    const lost = new Promise<void>((resolve) => channel.once('close', () => resolve()));

    (connected[0]!.connection as unknown as { stream: { destroy(error: Error): void } }).stream.destroy(new Error('network cable unplugged'));
    await lost;
    expect(connections.health()[0]).toMatchObject({ state: expect.stringMatching(/DISCONNECTED|CONNECTING/), lastError: expect.any(String) });
    await isReconnected;

    expect(connected[1]).not.toBe(connected[0]);
    expect(connections.health()[0]).toMatchObject({ state: 'CONNECTED', lastError: null });
    const fresh = await connections.confirmChannel(rabbit.url);
    expect(fresh).not.toBe(channel);
    await fresh.checkQueue(await rabbit.queueOn('', ''));
  });

  it('refuses callers at once while the delay after a failed attempt runs, instead of connecting again', async () => {
    connections = createAmqpConnections({ initialDelayMs: 60_000 });
    const url = 'amqp://guest:hunter2-secret@127.0.0.1:1/';

    const first = await connections.confirmChannel(url).catch((error: unknown) => error);
    const second = await connections.confirmChannel(url).catch((error: unknown) => error);

    expect(first).toBeInstanceOf(AmqpUnreachableError);
    expect((first as Error).message).toMatch(/^127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(second).toBeInstanceOf(AmqpUnreachableError);
    expect((second as Error).message).toMatch(/reconnecting with backoff$/);
    expect(connections.health()).toEqual([{ host: '127.0.0.1:1', vhost: '/', state: 'DISCONNECTED', lastError: expect.stringMatching(/ECONNREFUSED/), lastErrorAt: expect.any(Date) }]);
    expect(JSON.stringify([connections.health(), (first as Error).message, (second as Error).message])).not.toContain('hunter2');
  });

  it('gives up waiting when the caller’s signal aborts', async () => {
    connections = createAmqpConnections();
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));

    await expect(connections.confirmChannel(rabbit.url, { signal: controller.signal })).rejects.toThrow('shutting down');
  });
});

describe('redact', () => {
  it('removes the user and password, raw and percent-encoded, and the whole URL', () => {
    const url = 'amqps://svc%40acme:p%40ss%2Fw0rd@rabbit.example.com/%2Fprod';
    expect(redact(`login svc@acme with p@ss/w0rd and p%40ss%2Fw0rd at ${url}`, url))
      .toBe('login *** with *** and *** at amqps://rabbit.example.com/%2Fprod');
  });
});
