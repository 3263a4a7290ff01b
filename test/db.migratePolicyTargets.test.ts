// Migration 20261204100000_policy_targets on a database with webhook policies: each URL and secret
// becomes a webhook target, a policy without a URL has no target, and the old columns stay, for one
// release, a mirror of the webhook kind that processes of the previous release can still read and write.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';

const TARGETS = '20261204100000_policy_targets';
const database = useDatabaseBefore(TARGETS);

describe(`migration ${TARGETS}`, () => {
  it('turns each webhook URL and secret into a webhook target and keeps the old columns in step both ways', async () => {
    const url = await database.create();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(`insert into retry_policies (event_type, target_url, signing_secret, allow_private_target) values
        ('signed', 'https://hooks.example.com/a', 'a-very-long-secret-value', false),
        ('unsigned', 'http://10.0.0.8/b', null, true),
        ('secret.only', null, 'a-very-long-secret-value', false)`);

      expect((await migrate(url)).applied[0]).toBe(TARGETS);

      const { rows } = await c.query(`select event_type, target_kind, target_settings, allow_private_target from retry_policies order by event_type`);
      expect(rows).toEqual([
        { event_type: '*', target_kind: null, target_settings: null, allow_private_target: false },
        { event_type: 'secret.only', target_kind: null, target_settings: null, allow_private_target: false },
        { event_type: 'signed', target_kind: 'webhook', target_settings: { url: 'https://hooks.example.com/a', secret: 'a-very-long-secret-value' }, allow_private_target: false },
        { event_type: 'unsigned', target_kind: 'webhook', target_settings: { url: 'http://10.0.0.8/b' }, allow_private_target: true },
      ]);
      const mirror = async () => (await c.query(`select event_type, target_url, signing_secret from retry_policies
                                                   where event_type in ('signed', 'secret.only') order by event_type`)).rows;
      expect(await mirror()).toEqual([
        { event_type: 'secret.only', target_url: null, signing_secret: null },
        { event_type: 'signed', target_url: 'https://hooks.example.com/a', signing_secret: 'a-very-long-secret-value' },
      ]);
      // A process of this release moves the target: the old columns follow; another kind clears them.
      await c.query(`update retry_policies set target_settings = '{"url": "https://hooks.example.com/b"}' where event_type = 'signed'`);
      expect((await mirror())[1]).toEqual({ event_type: 'signed', target_url: 'https://hooks.example.com/b', signing_secret: null });
      await c.query(`update retry_policies set target_kind = 'test_kind', target_settings = '{}' where event_type = 'signed'`);
      expect((await mirror())[1]).toEqual({ event_type: 'signed', target_url: null, signing_secret: null });
      // A process of the previous release writes the old columns: the target follows.
      await c.query(`update retry_policies set target_url = 'https://old.example.com/c', signing_secret = 'a-very-long-secret-value' where event_type = 'secret.only'`);
      await c.query(`insert into retry_policies (event_type, target_url) values ('old.insert', 'https://old.example.com/d')`);
      const { rows: followed } = await c.query(`select event_type, target_kind, target_settings from retry_policies
                                                  where event_type in ('secret.only', 'old.insert') order by event_type`);
      expect(followed).toEqual([
        { event_type: 'old.insert', target_kind: 'webhook', target_settings: { url: 'https://old.example.com/d' } },
        { event_type: 'secret.only', target_kind: 'webhook', target_settings: { url: 'https://old.example.com/c', secret: 'a-very-long-secret-value' } },
      ]);
    } finally {
      await c.end();
    }
  });
});
