// The event page's "Redrive to source", in a real headless Chromium against the real service (retry
// loop, a declared RabbitMQ bridge) and the local RabbitMQ: the page shows where the event came from,
// and the button sends it back to that queue, where it is consumed again; the group page's requeue
// "to source" with its dry run counting events without a source; the redirects on the Bridges page.
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from './helpers/browser.ts';
import { useConsole } from './helpers/console.ts';
import { useTestDatabase } from './helpers/db.ts';
import { insertDeadLetter } from './helpers/factories.ts';
import { useRabbitVhost } from './helpers/rabbitVhost.ts';

const t = useTestDatabase();
const vhost = useRabbitVhost();
let connection: amqp.ChannelModel;

beforeAll(async () => {
  connection = await amqp.connect(vhost.url);
  const channel = await connection.createChannel();
  await channel.assertQueue('orders', { durable: false });
  await channel.assertQueue('orders.dlq', { durable: false });
  await channel.close();
});
afterAll(async () => {
  await connection?.close();
});
// The bridge's URL is the vhost's, known once its beforeAll has run.
const app = useConsole(t, () => ({
  LAZARUS_BRIDGES: JSON.stringify([{ name: 'shop', kind: 'rabbitmq', settings: { url: vhost.url, queue: 'orders.dlq' } }]),
}), { timeoutMs: 20_000 });

describe('console: redrive to source', () => {
  it('shows the origin on the event page and sends the event back to its queue', async () => {
    const row = await insertDeadLetter(t.db, {
      eventType: 'order.placed', status: 'EXHAUSTED', payload: { orderId: 42 },
      origin: { kind: 'amqp', bridge: 'shop', vhost: vhost.name, queue: 'orders', exchange: 'shop', routingKeys: ['order.placed'] },
    });
    const channel = await connection.createChannel();
    const arrived = new Promise<amqp.ConsumeMessage>((resolve) => {
      void channel.consume('orders', (m) => {
        if (m) resolve(m);
      }, { noAck: true });
    });

    const page = await app.open(`/failures/${row.id}`);
    expect(await page.getByTestId('origin').innerText()).toBe(`amqp · bridge shop · vhost ${vhost.name} · queue orders · exchange shop · routing keys order.placed`);
    await page.getByRole('button', { name: 'Redrive to source' }).click();

    const message = await arrived;
    expect(message.properties.messageId).toBe(String(row.id));
    expect(JSON.parse(message.content.toString())).toEqual({ orderId: 42 });
    await page.getByRole('heading', { name: /SUCCEEDED/ }).waitFor();
    await page.close();
    await channel.close();
  });

  it('requeues a group to source from its page: the dry run counts events without a source and holds the confirm until none is left', async () => {
    const origin = { kind: 'amqp', bridge: 'shop', vhost: vhost.name, queue: 'orders', exchange: 'shop', routingKeys: ['order.paid'] };
    const sourced = await insertDeadLetter(t.db, { eventType: 'order.paid', status: 'EXHAUSTED', errorMessage: 'card declined', payload: { orderId: 1 }, origin });
    const plain = await insertDeadLetter(t.db, { eventType: 'order.paid', status: 'EXHAUSTED', errorMessage: 'card declined', payload: { orderId: 2 } });
    const channel = await connection.createChannel();
    const arrived = new Promise<amqp.ConsumeMessage>((resolve) => {
      void channel.consume('orders', (m) => {
        if (m) resolve(m);
      }, { noAck: true });
    });

    const page = await app.open('/groups');
    // The service's folder makes the group; the list refetches when it does.
    await page.getByTestId('group-row').first().getByRole('link').first().click();
    await page.getByRole('button', { name: /Requeue, resolve or discard/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('radio', { name: 'the policy’s target' }).focus();
    await page.keyboard.press('ArrowDown');
    expect(await dialog.getByRole('radio', { name: /to source/ }).isChecked()).toBe(true);
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    expect(await dialog.getByTestId('without-source').innerText()).toMatch(/^1 of them have no source/);
    expect(await dialog.getByTestId('preview').innerText()).toMatch(/2 will be requeued to source/);
    expect(await dialog.getByRole('button', { name: /Confirm requeue/ }).isDisabled()).toBe(true);
    expect(await axeViolations(page)).toEqual([]);

    await t.db.deadLetterState.update({ where: { id: plain.id }, data: { status: 'RESOLVED' } });
    await dialog.getByRole('button', { name: 'Preview (dry run)' }).click();
    await dialog.getByText(/^1 will be requeued to source/).waitFor();
    expect(await dialog.getByTestId('without-source').count()).toBe(0);
    await dialog.getByRole('button', { name: 'Confirm requeue of 1' }).click();
    await dialog.getByTestId('bulk-done').waitFor();

    const message = await arrived;
    expect(message.properties.messageId).toBe(String(sourced.id));
    expect(JSON.parse(message.content.toString())).toEqual({ orderId: 1 });
    await page.close();
    await channel.close();
  });

  it('lists the redirects on the Bridges page, warns on a destination never seen, and lets an admin add and delete them', async () => {
    await insertDeadLetter(t.db, { origin: { kind: 'amqp', bridge: 'shop', vhost: vhost.name, queue: 'orders.v2', exchange: '', routingKeys: [] } });
    const page = await app.open('/bridges');
    await page.getByText('No redirects: a redrive to source goes where each event came from.').waitFor();
    const form = page.getByRole('form', { name: 'Add a redirect' });
    await form.getByLabel('From').click();
    await page.keyboard.type('orders');
    await form.getByLabel('To').click();
    await page.keyboard.type('orders.typo');
    await form.getByLabel('Through bridge').selectOption('shop');
    await page.keyboard.press('Enter');
    await page.getByTestId('unseen-destination').waitFor();
    expect(await page.getByTestId('unseen-destination').innerText()).toBe('No event came from orders.typo: Lazarus has never seen it. Check for a typo.');

    await form.getByLabel('From').fill('legacy');
    await form.getByLabel('To').fill('orders.v2');
    await form.getByRole('button', { name: 'Add redirect' }).click();
    const rows = page.getByTestId('redirects').locator('tbody tr');
    await rows.nth(1).waitFor();
    expect(await rows.allInnerTexts()).toEqual([
      expect.stringMatching(/^amqp\s+legacy\s+orders\.v2\s+shop\s+\d+s ago by local/),
      expect.stringMatching(/^amqp\s+orders\s+orders\.typo\s+No event came from orders\.typo.*\s+shop/s),
    ]);
    expect(await page.getByTestId('unseen-destination').count()).toBe(1);
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Delete redirect from orders', exact: true }).click();
    await page.getByRole('button', { name: 'Delete redirect from orders', exact: true }).waitFor({ state: 'detached' });
    expect(await t.db.sourceRedirect.findMany({ select: { fromPlace: true, toPlace: true } })).toEqual([{ fromPlace: 'legacy', toPlace: 'orders.v2' }]);
    await page.close();
  });
});
