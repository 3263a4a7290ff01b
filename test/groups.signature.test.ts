// The error group signature (migration 20261126100000_stack_signatures): the fingerprint, else the
// message signature plus the stack's top frames with line numbers, addresses and ids removed.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/db/migrate.ts';
import { foldErrorGroupLedger } from '../src/domain/errorGroupFolding.ts';
import { useDatabaseBefore } from './helpers/migrations.ts';
import { testPool, useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();
let sql: pg.Pool;

beforeAll(() => {
  sql = testPool(t.url, { max: 4 });
});
afterAll(async () => {
  await sql.end();
});

const node = (line: number, col: number, caller = 'processOrder') => `Error: HTTP 503 from inventory (request ${line * 7})
    at chargeCard (/app/src/payments/charge.ts:${line}:${col})
    at async ${caller} (/app/src/orders/process.ts:${line + 40}:5)
    at async Promise.all (index 0)
    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)`;

/** Real-looking stacks per language, and the frames they normalise to. */
const STACKS: Record<string, [stack: string, frames: string]> = {
  node: [
    `TypeError: Cannot read properties of undefined (reading 'id')
    at chargeCard (/app/src/payments/charge.ts:42:11)
    at async processOrder (file:///srv/app/dist/orders/process.mjs:88:5)
    at Object.<anonymous> (/home/runner/work/app/node_modules/.pnpm/express@4.18.2/node_modules/express/lib/router/layer.js:95:5)
    at new Foo (https://cdn.acme.com/assets/main.3f2a1b9c.js?v=12:1:4567)
    at /app/src/index.ts:12:3
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)`,
    `at chargeCard (payments/charge.ts)
at processOrder (orders/process.mjs)
at Object.<anonymous> (router/layer.js)
at new Foo (assets/main.<hex>.js)
at (src/index.ts)`,
  ],
  java: [
    `java.lang.IllegalStateException: Order 123 not found
\tat com.acme.orders.OrderService.load(OrderService.java:87)
\tat com.acme.orders.OrderService$$EnhancerBySpringCGLIB$$a1b2c3d4.load(<generated>)
\tat jdk.internal.reflect.GeneratedMethodAccessor123.invoke(Unknown Source)
\tat java.base/java.lang.reflect.Method.invoke(Method.java:568)
\tat com.acme.orders.OrderController.lambda$get$0(OrderController.java:41) ~[orders-1.4.2.jar:1.4.2]
\tat com.acme.Foo$$Lambda$1234/0x0000000800c4d840.apply(Unknown Source)
\t... 12 more`,
    `at com.acme.orders.OrderService.load(OrderService.java)
at com.acme.orders.OrderService$$EnhancerBySpringCGLIB$$<hex>.load(<generated>)
at jdk.internal.reflect.GeneratedMethodAccessor<id>.invoke(Unknown Source)
at java.base/java.lang.reflect.Method.invoke(Method.java)
at com.acme.orders.OrderController.lambda$get$<n>(OrderController.java)`,
  ],
  python: [
    `Traceback (most recent call last):
  File "/srv/app/worker/tasks.py", line 20, in <module>
    main()
KeyError: 'id'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/celery/app/trace.py", line 451, in trace_task
    R = retval = fun(*args, **kwargs)
  File "/srv/app/worker/tasks.py", line 33, in handle_order
    charge(order)
  File "/srv/app/worker/payments.py", line 12, in charge
    raise PaymentError(f"card declined for {order.id}")
worker.payments.PaymentError: card declined for 42`,
    `at charge (worker/payments.py)
at handle_order (worker/tasks.py)
at trace_task (app/trace.py)`,
  ],
  go: [
    `panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]

goroutine 17 [running]:
panic({0x6b2a40, 0xc00012e000})
\t/usr/local/go/src/runtime/panic.go:914 +0x21f
github.com/acme/orders/internal/store.(*Store).Load(0x0, {0x7f1e28, 0xc000112000}, 0x2a)
\t/build/orders/internal/store/store.go:88 +0x1d
github.com/acme/orders/internal/api.handleOrder(...)
\t/root/go/pkg/mod/github.com/acme/orders@v1.4.2/internal/api/orders.go:41
created by main.main in goroutine 1
\t/build/orders/main.go:20 +0x7e`,
    `at github.com/acme/orders/internal/store.(*Store).Load (store/store.go)
at github.com/acme/orders/internal/api.handleOrder (api/orders.go)
at created by main.main (orders/main.go)`,
  ],
  ruby: [
    `/app/app/models/order.rb:12:in \`charge': card declined (PaymentError)
\tfrom /usr/local/bundle/gems/activerecord-7.1.2/lib/active_record/transactions.rb:313:in \`block in transaction'
\tfrom /app/app/jobs/charge_job.rb:7:in 'ChargeJob#perform'`,
    `at charge (models/order.rb)
at block in transaction (active_record/transactions.rb)
at ChargeJob#perform (jobs/charge_job.rb)`,
  ],
  dotnet: [
    `System.InvalidOperationException: Order 42 was not found
   at Acme.Orders.OrderService.Load(Int32 id) in C:\\build\\src\\Acme.Orders\\Services\\OrderService.cs:line 87
   at Acme.Orders.OrderService.<>c__DisplayClass5_0.<LoadAsync>b__0() in /src/Acme.Orders/Services/OrderService.cs:line 40
--- End of stack trace from previous location ---
   at System.Threading.Tasks.Task.Execute()`,
    `at Acme.Orders.OrderService.Load(Int32 id) (Services/OrderService.cs)
at Acme.Orders.OrderService.<>c__DisplayClass5_0.<LoadAsync>b__0() (Services/OrderService.cs)
at System.Threading.Tasks.Task.Execute()`,
  ],
  browser: [
    `charge@https://cdn.acme.com/assets/app.9f8e7d6c.js:1:2345
@https://cdn.acme.com/assets/app.9f8e7d6c.js:1:999`,
    `at charge (assets/app.<hex>.js)
at (assets/app.<hex>.js)`,
  ],
};

async function frames(stack: string | null): Promise<string | null> {
  return (await sql.query<{ f: string | null }>('select lazarus_stack_frames($1) as f', [stack])).rows[0]!.f;
}

async function insert(v: { message?: string; stack?: string | null; fingerprint?: string | null; eventType?: string; status?: string }) {
  const { rows } = await sql.query<{ id: string }>(
    `insert into dead_letters (event_type, error_kind, error_message, error_stack, fingerprint, status)
     values ($1, 'DOWNSTREAM_API', $2, $3, $4, $5::"DeadLetterStatus") returning id::text`,
    [v.eventType ?? 'order.placed', v.message ?? 'HTTP 503 from inventory (request 1)', v.stack ?? null, v.fingerprint ?? null, v.status ?? 'PENDING'],
  );
  return rows[0]!.id;
}

/**
 * Each group's counts against a scan: total = its stored rows plus its deleted ones (tombstones keep
 * the group), unresolved = its stored unresolved rows; hourly counts sum to the total.
 */
async function groupsAgainstScan(q: pg.Pool | pg.Client): Promise<{ groups: number; differing: number }> {
  const { rows } = await q.query<{ groups: number; differing: number }>(`
    with scan as (select id, count(*) as total, sum(unresolved) as unresolved
                    from (select error_group_id as id, lazarus_is_unresolved(status) as unresolved from dead_letters_current
                          union all select error_group_id, 0 from dead_letter_tombstones) x group by id),
         hours as (select group_id as id, sum(count) as n from error_group_hours group by 1)
    select count(*)::int as groups,
           count(*) filter (where s.total is distinct from g.total_count or s.unresolved is distinct from g.unresolved_count
                              or h.n is distinct from g.total_count)::int as differing
      from scan s full join error_groups g using (id) left join hours h using (id)`);
  return rows[0]!;
}

async function groups() {
  await foldErrorGroupLedger(t.db);
  const { rows } = await sql.query<{ id: string; signature: string; total_count: string; unresolved_count: string }>(
    'select id::text, signature, total_count::text, unresolved_count::text from error_groups order by sample_dead_letter_id nulls last, id');
  return rows;
}

describe('stack frames', () => {
  for (const [language, [stack, expected]] of Object.entries(STACKS)) {
    it(`normalises a ${language} stack to its top frames without line numbers, addresses or ids`, async () => {
      expect(await frames(stack)).toBe(expected);
    });
  }

  it('gives the same frames for the same code at other lines, columns, hosts and build hashes', async () => {
    expect(await frames(node(42, 11))).toBe(await frames(node(97, 3)));
    const deployed = (root: string, hash: string) => `Error: x\n    at run (${root}/dist/main.${hash}.js:1:${hash.length})`;
    expect(await frames(deployed('/srv/app', '3f2a1b9c'))).toBe(await frames(deployed('https://cdn.example.com/v2', '77aa01ff')));
  });

  it('does not count the message lines at the top of a JS stack as frames', async () => {
    const stack = 'Error: the total at checkout (step 3) is wrong\n  at least one line was expected\n    at price (/app/src/cart.ts:10:2)';
    expect(await frames(stack)).toBe('at price (src/cart.ts)');
  });

  it('gives NULL for no stack, an empty one and one without a recognisable frame', async () => {
    for (const stack of [null, '', 'boom', 'Error: boom\nsomething else entirely\n\n']) expect(await frames(stack)).toBeNull();
  });

  it('keeps at most 5 frames of at most 120 characters, in printable ASCII', async () => {
    const long = `Error: x\n${Array.from({ length: 30 }, (_, i) => `    at f${'ö'.repeat(200)}${i} (/app/src/a.ts:${i}:1)`).join('\n')}`;
    const result = (await frames(long))!;
    const lines = result.split('\n');
    expect(lines).toHaveLength(5);
    for (const line of lines) {
      expect(line.length).toBeLessThanOrEqual(123);
      expect(line).toMatch(/^at f\?+$/);
    }
  });

  it('reads only the first 2 KB of a stack (the last 2 KB of a Python traceback)', async () => {
    const late = '    at late (/app/src/late.ts:1:1)';
    expect(await frames(`Error: x\n${'x'.repeat(1900)}\n${late}`)).toBe('at late (src/late.ts)');
    expect(await frames(`Error: x\n${'x'.repeat(2100)}\n${late}`)).toBeNull();
    const python = '  File "/srv/app/late.py", line 1, in late';
    expect(await frames(`${python}\n${'x'.repeat(1900)}\nValueError`)).toBe('at late (app/late.py)');
    expect(await frames(`${python}\n${'x'.repeat(2100)}\nValueError`)).toBeNull();
  });
});

describe('the group signature', () => {
  it('puts the same error with other line numbers, addresses and ids in one group', async () => {
    await insert({ stack: node(42, 11) });
    await insert({ message: 'HTTP 503 from inventory (request 2)', stack: node(97, 3) });
    await insert({ message: 'HTTP 503 from inventory (request 3)', stack: STACKS.go![0] });
    await insert({ message: 'HTTP 503 from inventory (request 4)', stack: STACKS.go![0].replaceAll('0xc000', '0xd100').replaceAll(':88', ':90') });

    const rows = await groups();
    expect(rows.map((g) => [g.signature, g.total_count])).toEqual([
      [`HTTP <n> from inventory (request <n>)\n${await frames(node(1, 1))}`, '2'],
      [`HTTP <n> from inventory (request <n>)\n${STACKS.go![1]}`, '2'],
    ]);
  });

  it('splits the same message raised from two call sites into two groups', async () => {
    await insert({ stack: node(42, 11, 'processOrder') });
    await insert({ stack: node(42, 11, 'refundOrder') });
    await insert({ stack: node(50, 1, 'refundOrder') });
    const rows = await groups();
    expect(rows.map((g) => g.total_count)).toEqual(['1', '2']);
    expect(rows[1]!.signature).toContain('at refundOrder (orders/process.ts)');
  });

  it('lets the fingerprint win over message and frames', async () => {
    await insert({ stack: node(1, 1, 'a'), fingerprint: 'inventory-down' });
    await insert({ message: 'socket hang up', stack: node(2, 2, 'b'), fingerprint: 'inventory-down' });
    expect((await groups()).map((g) => [g.signature, g.total_count])).toEqual([['inventory-down', '2']]);
  });

  it('falls back to the message signature for a NULL or unrecognisable stack', async () => {
    await insert({});
    await insert({ stack: 'no frames in here' });
    await insert({ stack: '' });
    expect((await groups()).map((g) => [g.signature, g.total_count])).toEqual([['HTTP <n> from inventory (request <n>)', '3']]);
  });

  it('keeps errorSignature the message signature', async () => {
    const id = await insert({ stack: node(3, 3) });
    const { rows } = await sql.query('select error_signature from dead_letters where id = $1', [id]);
    expect(rows[0].error_signature).toBe('HTTP <n> from inventory (request <n>)');
  });

  it('moves a row to its new group when an UPDATE changes its stack', async () => {
    const id = await insert({});
    await groups();
    await sql.query('update dead_letters_current set error_stack = $2 where id = $1', [id, node(1, 1)]);
    expect((await groups()).map((g) => [g.signature.split('\n').length, g.total_count, g.unresolved_count])).toEqual([[1, '0', '0'], [5, '1', '1']]);
  });

  it('keeps the groups equal to a scan through inserts, status updates and deletes of rows with stacks', async () => {
    await sql.query(`insert into dead_letters (event_type, error_kind, error_message, error_stack, status)
      select 'bulk.' || (i % 2), 'CRASH', 'worker ' || i || ' crashed',
             'Error: worker crashed' || chr(10) || '    at handler (/app/src/handlers/h' || (i % 5) || '.ts:' || i || ':1)',
             (case when i % 4 = 0 then 'RESOLVED' else 'PENDING' end)::"DeadLetterStatus"
        from generate_series(1, 400) i`);
    await sql.query(`update dead_letters_current set status = 'DISCARDED' where id % 3 = 0`);
    await sql.query(`delete from dead_letters where id % 7 = 0`);
    await foldErrorGroupLedger(t.db);
    expect(await groupsAgainstScan(sql)).toEqual({ groups: 10, differing: 0 });
    const { rows } = await sql.query<{ n: number }>(`select count(*)::int as n from dead_letters d join error_groups g on g.id = d.error_group_id
      where g.signature = lazarus_group_signature(d.fingerprint, d.error_signature, d.error_stack)`);
    expect(rows[0]!.n).toBe(400 - 57);
  });
});

describe('the migration', () => {
  const database = useDatabaseBefore('20261126100000');

  it('moves existing rows to the groups their stacks say, with counts equal to a scan and statuses inherited', async () => {
    const url = await database.create();

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // Before: one group per message, whatever the stack.
      await client.query(`insert into dead_letters (event_type, error_kind, error_message, error_stack, fingerprint, status)
        select 'order.placed', 'CRASH', 'boom ' || i,
               case when i % 5 = 0 then null
                    else 'Error: boom' || chr(10) || '    at site' || (i % 3) || ' (/app/src/s.ts:' || i || ':1)' end,
               case when i % 11 = 0 then 'fp' end,
               (case when i % 2 = 0 then 'EXHAUSTED' else 'SUCCEEDED' end)::"DeadLetterStatus"
          from generate_series(1, 300) i`);
      await client.query(`insert into dead_letters (event_type, error_kind, error_message, error_stack)
        select 'quiet.type', 'TIMEOUT', 'slow', 'Error: slow' || chr(10) || '    at wait (/app/src/w.ts:' || i || ':1)' from generate_series(1, 5) i`);
      await client.query(`delete from dead_letters where id in (1, 2, 3)`);
      await client.query('select lazarus_fold_error_groups(100000)');
      await client.query(`update error_groups set status = 'IGNORED', note = 'known' where event_type = 'quiet.type'`);
      const before = (await client.query('select signature, total_count::int as total from error_groups order by signature')).rows;
      expect(before).toEqual([{ signature: 'boom <n>', total: 273 }, { signature: 'fp', total: 27 }, { signature: 'slow', total: 5 }]);

      await migrate(url);

      expect(await groupsAgainstScan(client)).toEqual({ groups: 6, differing: 0 });
      const after = (await client.query(`select signature, status::text, note, total_count::int as total, unresolved_count::int as unresolved
        from error_groups order by signature`)).rows;
      // 'boom <n>' keeps its 55 stack-less rows and the 3 deleted ones; the rest split by call site.
      expect(after).toEqual([
        { signature: 'boom <n>', status: 'OPEN', note: null, total: 58, unresolved: 28 },
        { signature: 'boom <n>\nat site0 (src/s.ts)', status: 'OPEN', note: null, total: 71, unresolved: 36 },
        { signature: 'boom <n>\nat site1 (src/s.ts)', status: 'OPEN', note: null, total: 72, unresolved: 36 },
        { signature: 'boom <n>\nat site2 (src/s.ts)', status: 'OPEN', note: null, total: 72, unresolved: 36 },
        { signature: 'fp', status: 'OPEN', note: null, total: 27, unresolved: 13 },
        { signature: 'slow\nat wait (src/w.ts)', status: 'IGNORED', note: 'known', total: 5, unresolved: 5 },
      ]);
      const { rows: [keys] } = await client.query(`select count(*)::int as rows,
          count(*) filter (where g.signature = lazarus_group_signature(d.fingerprint, d.error_signature, d.error_stack))::int as matching
        from dead_letters d left join error_groups g on g.id = d.error_group_id`);
      expect(keys).toEqual({ rows: 302, matching: 302 });
      const { rows: [hours] } = await client.query(`select (select sum(count)::int from error_group_hours) as hours, (select sum(total_count)::int from error_groups) as total`);
      expect(hours).toEqual({ hours: 305, total: 305 });
      const { rows: history } = await client.query(`select g.signature, a.reason from error_group_actions a join error_groups g on g.id = a.group_id
        where a.reason like '%split by stack frames%' order by 1`);
      expect(history).toHaveLength(4);
      expect((await client.query(`select count(*)::int as n from error_groups where signature = 'slow'`)).rows[0].n).toBe(0);
      expect((await client.query('select count(*)::int as n from error_group_deltas')).rows[0].n).toBe(0);
    } finally {
      await client.end();
    }
  });
});
