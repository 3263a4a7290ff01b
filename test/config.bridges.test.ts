// Bridges are declared in one place (LAZARUS_BRIDGES or LAZARUS_BRIDGES_FILE); a bad declaration
// stops start-up with one line naming the bridge and the field, and never echoes a credential.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { startService, StartupError } from '../src/service.ts';
import { silentLogger } from './helpers/retry.ts';

const RABBIT = { name: 'orders', kind: 'rabbitmq', settings: { url: 'amqp://user:s3cret@rabbit.example.com/shop', queue: 'orders.dlq' } };

describe('bridge declarations', () => {
  it('reads them from LAZARUS_BRIDGES or from the file LAZARUS_BRIDGES_FILE names', async () => {
    expect(loadConfig({ LAZARUS_BRIDGES: JSON.stringify([RABBIT]) }).bridges).toEqual([RABBIT]);
    const dir = await mkdtemp(join(tmpdir(), 'lazarus-bridges-'));
    await writeFile(join(dir, 'bridges.json'), JSON.stringify([RABBIT]));
    expect(loadConfig({ LAZARUS_BRIDGES_FILE: join(dir, 'bridges.json') }).bridges).toEqual([RABBIT]);
    expect(loadConfig({}).bridges).toEqual([]);
  });

  it.each([
    ['not JSON', '[{', 'LAZARUS_BRIDGES: not JSON'],
    ['not an array', '{}', 'LAZARUS_BRIDGES: must be a JSON array of bridges'],
    ['a bad name', JSON.stringify([{ ...RABBIT, name: 'a b' }]), 'LAZARUS_BRIDGES: bridge 1: name must be'],
    ['a name twice', JSON.stringify([RABBIT, RABBIT]), 'LAZARUS_BRIDGES: bridge "orders": name is declared twice'],
    ['no settings', JSON.stringify([{ name: 'orders', kind: 'rabbitmq' }]), 'LAZARUS_BRIDGES: bridge "orders": settings must be an object'],
    ['an unknown field', JSON.stringify([{ ...RABBIT, batch: 5 }]), 'LAZARUS_BRIDGES: bridge "orders": unknown field batch'],
  ])('refuses %s at load, naming it', (_label, text, message) => {
    expect(() => loadConfig({ LAZARUS_BRIDGES: text })).toThrow(ConfigError);
    expect(() => loadConfig({ LAZARUS_BRIDGES: text })).toThrow(message);
  });

  it.each([
    ['an unknown kind', { ...RABBIT, kind: 'kafka' }, 'LAZARUS_BRIDGES: bridge "orders": kind "kafka" is not known (known: rabbitmq, nats'],
    ['a missing queue', { ...RABBIT, settings: { url: RABBIT.settings.url } }, 'LAZARUS_BRIDGES: bridge "orders" (rabbitmq): settings.queue:'],
    ['a bad URL', { ...RABBIT, settings: { ...RABBIT.settings, url: 'http://user:s3cret@x' } }, 'LAZARUS_BRIDGES: bridge "orders" (rabbitmq): settings.url: must be an amqp:// or amqps:// URL'],
    ['a bad prefetch', { ...RABBIT, settings: { ...RABBIT.settings, prefetch: 0 } }, 'LAZARUS_BRIDGES: bridge "orders" (rabbitmq): settings.prefetch:'],
  ])('stops start-up on %s with one line naming the bridge and field, before anything starts', async (_label, bridge, message) => {
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none', LAZARUS_BRIDGES: JSON.stringify([bridge]) });
    const error = await startService(config, silentLogger).then(() => null, (e: unknown) => e as Error);
    expect(error).toBeInstanceOf(StartupError);
    expect(error!.message).toContain(message);
    expect(error!.message).not.toContain('\n');
    expect(error!.message).not.toContain('s3cret');
  });
});
