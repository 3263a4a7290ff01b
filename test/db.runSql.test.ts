// runSql, the one way hand-written SQL runs: on the Db's pg pool with the row types of Prisma's
// $queryRaw (which db/sql's mappers were written against), and on a transaction's own connection.
import { describe, expect, it } from 'vitest';
import { Prisma } from '../src/generated/prisma/client.ts';
import { createDb } from '../src/db/createDb.ts';
import { isExactJson, runSql } from '../src/db/runSql.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

// Every type db/sql's statements return, and the ones whose pg and Prisma readings differ.
const TYPES = Prisma.sql`
  select 1::int8 as i8, null::int8 as no_i8, 2::int4 as i4, 3::int2 as i2, 1.5::numeric as num, 2.5::float8 as f8,
         count(*) as n, sum(2::int8) as sum8, 5::oid as o,
         '2024-01-02 03:04:05.123+00'::timestamptz as tstz, '2024-01-02 03:04:05.123'::timestamp as ts, '2024-01-02'::date as d,
         '{"a": 1, "b": [true, null]}'::jsonb as jb, '[1, 2]'::json as j,
         array[1, null, 3]::int8[] as i8s, array[1, 2]::int4[] as i4s, array[1.5]::numeric[] as nums, array['a', 'b']::text[] as texts,
         array['2024-01-02 03:04:05+00']::timestamptz[] as tstzs, true as b, 'x'::text as t, 'PENDING'::"DeadLetterStatus" as status,
         gen_random_uuid()::text as u`;

describe('runSql', () => {
  it('reads json with every number as stored, and tells what it read from what Prisma parsed', async () => {
    const sql = Prisma.sql`select '{"id": 12345678901234567890, "n": 0.1000000000000000055511151231257827}'::jsonb as jb`;
    const [viaPool] = await runSql<{ jb: object }>(t.db, sql);
    const [viaPrisma] = await t.db.$queryRaw<{ jb: object }[]>(sql);

    expect(JSON.stringify(viaPool!.jb)).toBe('{"n":0.1000000000000000055511151231257827,"id":12345678901234567890}');
    expect(JSON.stringify(viaPrisma!.jb)).toBe('{"n":0.1,"id":12345678901234567000}');
    expect(isExactJson({ ...viaPool! }.jb)).toBe(true);
    expect(isExactJson(viaPrisma!.jb)).toBe(false);
  });

  it('returns the values Prisma $queryRaw returns for the same statement', async () => {
    const [viaPool] = await runSql<Record<string, unknown>>(t.db, TYPES);
    const [viaPrisma] = await t.db.$queryRaw<Record<string, unknown>[]>(TYPES);
    const { u: _a, ...pool } = viaPool!;
    const { u: _b, ...prisma } = viaPrisma!;
    expect(pool).toEqual(prisma);
    expect(pool).toEqual({
      i8: 1n, no_i8: null, i4: 2, i2: 3, num: new Prisma.Decimal('1.5'), f8: 2.5, n: 1n, sum8: new Prisma.Decimal(2), o: 5n,
      tstz: new Date('2024-01-02T03:04:05.123Z'), ts: new Date('2024-01-02T03:04:05.123Z'), d: new Date('2024-01-02T00:00:00Z'),
      jb: { a: 1, b: [true, null] }, j: [1, 2], i8s: [1n, null, 3n], i4s: [1, 2], nums: [new Prisma.Decimal('1.5')], texts: ['a', 'b'],
      tstzs: [new Date('2024-01-02T03:04:05Z')], b: true, t: 'x', status: 'PENDING',
    });
    expect(pool.num).toBeInstanceOf(Prisma.Decimal);
  });

  it('binds the values of the Prisma.Sql as $queryRaw binds them', async () => {
    const sql = Prisma.sql`select ${[1n, 2n]}::bigint[] as ids, ${new Date('2024-01-02T03:04:05.123Z')}::timestamptz as at,
      ${'{"a":1}'}::jsonb as doc, ${['x', null]}::text[] as texts, ${7n}::bigint as big, ${null}::int as nothing`;
    const [row] = await runSql<Record<string, unknown>>(t.db, sql);
    expect(row).toEqual((await t.db.$queryRaw<Record<string, unknown>[]>(sql))[0]);
    expect(row).toEqual({ ids: [1n, 2n], at: new Date('2024-01-02T03:04:05.123Z'), doc: { a: 1 }, texts: ['x', null], big: 7n, nothing: null });
  });

  it('runs inside an interactive transaction on its connection, seeing its uncommitted writes', async () => {
    const seen = await t.db.$transaction(async (tx) => {
      await runSql(tx, Prisma.sql`insert into retry_policies (event_type) values ('runsql.tx')`);
      const [mine] = await runSql<{ n: number; xid: string }>(tx, Prisma.sql`
        select count(*)::int as n, pg_current_xact_id_if_assigned()::text as xid from retry_policies where event_type = 'runsql.tx'`);
      const [outside] = await runSql<{ n: number }>(t.db, Prisma.sql`select count(*)::int as n from retry_policies where event_type = 'runsql.tx'`);
      return { inside: mine!.n, xid: mine!.xid, outside: outside!.n };
    });
    expect(seen.inside).toBe(1);
    expect(seen.xid).not.toBeNull();
    expect(seen.outside).toBe(0);
  });

  it('rolls back with the transaction it ran in', async () => {
    await expect(t.db.$transaction(async (tx) => {
      await runSql(tx, Prisma.sql`insert into retry_policies (event_type) values ('runsql.rollback')`);
      throw new Error('abort');
    })).rejects.toThrow('abort');
    const [row] = await runSql<{ n: number }>(t.db, Prisma.sql`select count(*)::int as n from retry_policies where event_type = 'runsql.rollback'`);
    expect(row!.n).toBe(0);
  });

  it('prepares a named statement, and nothing when the preparedStatements switch is off', async () => {
    const prepared = async (preparedStatements: boolean) => {
      // One connection, so pg_prepared_statements shows everything the pool prepared.
      const handle = createDb(t.url, { poolMax: 1, acquireTimeoutMs: 5_000, statementTimeoutMs: 15_000, applicationName: 'lazarus-test-runsql', preparedStatements });
      try {
        for (let i = 0; i < 3; i++) expect(await runSql(handle.db, Prisma.sql`select ${i}::int as i`, { name: 'runsql_probe' })).toEqual([{ i }]);
        await runSql(handle.db, Prisma.sql`select ${1}::int as unnamed`);
        return await runSql(handle.db, Prisma.sql`select name, statement from pg_prepared_statements`);
      } finally {
        await handle.close();
      }
    };
    expect(await prepared(true)).toEqual([{ name: 'lazarus_runsql_probe', statement: 'select $1::int as i' }]);
    expect(await prepared(false)).toEqual([]);
  });
});
