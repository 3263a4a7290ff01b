// Migration 20261127110000_signature_once turns the generated error_signature column into one a
// row trigger fills: every stored row must keep its signature and group, and new rows must get the
// same values the generated column and the old trigger gave.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';

const MIGRATION = '20261127110000_signature_once';
const database = useDatabaseBefore(MIGRATION);

const INSERT = `
  insert into dead_letters (event_type, error_kind, error_message, error_stack, fingerprint)
  values ('order.placed', 'DOWNSTREAM_API', 'HTTP 503 from inventory-service (request ' || $1::int || ')', null, null),
         ('order.placed', 'TIMEOUT', 'timed out calling 4f1c2d9e-0b7a-4c7e-9d8f-1a2b3c4d5e6f at 2026-11-27T10:00:00Z', null, null),
         ('order.placed', 'CRASH', 'TypeError: x is undefined',
          E'TypeError: x is undefined\\n    at charge (/app/src/payments/charge.ts:42:11)\\n    at async main (/app/src/index.ts:' || $1::int || ':3)', null),
         ('invoice.sent', 'VALIDATION', 'bad amount ' || $1::int, null, 'amount-check')`;
const ROWS = `select id, error_signature, error_group_id::text, lazarus_group_signature(fingerprint, error_signature, error_stack) as signature
                from dead_letters order by id`;

describe(`migration ${MIGRATION}`, () => {
  it('keeps every stored signature and group, and gives new rows the values the generated column gave', async () => {
    const url = await database.create();
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(INSERT, [1]);
      const before = (await c.query(ROWS)).rows;
      expect(before.every((r) => r.error_signature !== null && r.error_group_id !== null)).toBe(true);

      expect((await migrate(url)).applied[0]).toBe(MIGRATION); // and every later migration after it
      expect((await c.query(ROWS)).rows).toEqual(before);
      const { rows: [column] } = await c.query(`select is_generated from information_schema.columns
                                                 where table_name = 'dead_letters' and column_name = 'error_signature'`);
      expect(column.is_generated).toBe('NEVER');

      // The same rows again, now through the trigger: the same signatures and groups.
      await c.query(INSERT, [1]);
      const after = (await c.query(ROWS)).rows;
      expect(after.slice(before.length).map(({ id: _id, ...r }) => r)).toEqual(before.map(({ id: _id, ...r }) => r));
    } finally {
      await c.end();
    }
  });
});
