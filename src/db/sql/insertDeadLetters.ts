import { Prisma } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { runSql } from '../runSql.ts';
import type { ErrorKind } from '../../generated/prisma/enums.ts';

/** A validated row, with the payload and headers already serialised once. */
export interface ValidRecord {
  eventType: string;
  payloadJson: string;
  headersJson: string | null;
  /** Source coordinates, serialised (`{"kind": …}`), or null. */
  originJson: string | null;
  errorKind: ErrorKind | null;
  errorMessage: string | null;
  errorStack: string | null;
  queue: string | null;
  source: string | null;
  orderingKey: string | null;
  orderingSeq: string | null;
  occurredAt: string | null;
  dedupeKey: string | null;
  maxAttempts: number | null;
  nextAttemptAt: string | null;
}

export interface InsertedRow {
  idx: number;
  id: bigint | null;
  created: boolean;
}

/**
 * One round trip for a whole batch: each column travels as one array parameter, ids are drawn up
 * front so RETURNING maps back to input positions, ON CONFLICT (dedupe_key) DO NOTHING makes ingest
 * idempotent (also within a batch), and the RECORDED history rows go in the same statement.
 * Omitted fields take the table's defaults, the same ones a plain SQL INSERT gets. It runs on pg
 * directly, prepared (see runSql).
 */
export async function insertDeadLetters(db: Db, rows: ValidRecord[], actor: string): Promise<InsertedRow[]> {
  return runSql<InsertedRow>(db, insertDeadLettersSql(rows, actor), { name: 'insert_dead_letters' });
}

/** Always the same text (the batch travels as array parameters), so it can be prepared. */
function insertDeadLettersSql(rows: ValidRecord[], actor: string): Prisma.Sql {
  const payloads = jsonArrayBytes(rows.map((r) => r.payloadJson));
  const headers = jsonArrayBytes(rows.map((r) => r.headersJson));
  const origins = jsonArrayBytes(rows.map((r) => r.originJson));
  const c = (key: keyof ValidRecord) => rows.map((r) => r[key]);
  // A scalar subquery, so each array is decoded and parsed once (an InitPlan): convert_from is
  // STABLE, and in the select list it ran for every row.
  const json = (bytes: Buffer) => Prisma.sql`(select convert_from(${bytes}::bytea, 'UTF8')::jsonb)`;
  return Prisma.sql`
with input as materialized (
  select x.*, (x.ord - 1)::int as idx, ${json(payloads)} -> (x.ord - 1)::int as payload,
         nullif(${json(headers)} -> (x.ord - 1)::int, 'null') as headers,
         nullif(${json(origins)} -> (x.ord - 1)::int, 'null') as origin,
         -- The sequence is looked up once (an InitPlan), not per row: 3 us a row otherwise.
         nextval((select pg_get_serial_sequence('dead_letters', 'id')::regclass)) as new_id
    from unnest(${c('eventType')}::text[], ${c('errorKind')}::"ErrorKind"[], ${c('errorMessage')}::text[], ${c('errorStack')}::text[], ${c('queue')}::text[], ${c('source')}::text[], ${c('orderingKey')}::text[],
                ${c('orderingSeq')}::bigint[], ${c('occurredAt')}::timestamptz[], ${c('dedupeKey')}::text[], ${c('maxAttempts')}::int[], ${c('nextAttemptAt')}::timestamptz[])
         with ordinality as x(event_type, error_kind, error_message, error_stack, queue, source,
                              ordering_key, ordering_seq, occurred_at, dedupe_key, max_attempts, next_attempt_at, ord)),
ins as (
  insert into dead_letters (id, event_type, payload, headers, error_kind, error_message, error_stack,
                            queue, source, ordering_key, ordering_seq, occurred_at, dedupe_key,
                            max_attempts, next_attempt_at, origin)
  select new_id, event_type, payload, coalesce(headers, '{}'), coalesce(error_kind, 'UNKNOWN'),
         coalesce(error_message, ''), error_stack, coalesce(queue, 'default'), coalesce(source, 'unknown'),
         ordering_key, ordering_seq, coalesce(occurred_at, now()), dedupe_key, max_attempts,
         -- null means due now (the state trigger's default); a value is copied to the state row and
         -- cleared again, which costs that row a second write (migration 20261203110000_state_only_in_states)
         next_attempt_at, origin
    from input order by idx
  on conflict (dedupe_key) do nothing
  returning id, dedupe_key),
history as (
  insert into dead_letter_actions (dead_letter_id, action, actor)
  select id, 'RECORDED', ${actor}::text from ins)
-- COALESCE evaluates its subqueries only for rows that were not inserted (duplicates).
select i.idx,
       coalesce(by_id.id,
                -- a duplicate of a row inserted earlier in this same batch (invisible to this statement's snapshot)
                (select min(k.id) from ins k where k.dedupe_key = i.dedupe_key),
                -- stored before this statement: one probe of the dedupe_key index
                (select e.id from dead_letters e where e.dedupe_key = i.dedupe_key)) as id,
       by_id.id is not null as created
  from input i
  left join ins by_id on by_id.id = i.new_id
 order by i.idx`;
}

/**
 * Already-serialised JSON documents (null: JSON null) as the UTF-8 bytes of one JSON array, which
 * PostgreSQL parses once. Bytes, not a string: joined into one string, a 500-event batch made a
 * ~1.5 MB string twice (the join, then its flattening when pg measured it), and each fresh string
 * that large is new memory for V8, whose first touch cost ~4 ms a batch on this machine kind,
 * ~16 µs an event (`npm run bench:ingest`, docs/benchmarks.md). Buffers come from malloc, which
 * reuses freed memory. Sent as bytea (pg sends a Buffer as it is), they also need no escaping.
 */
function jsonArrayBytes(documents: (string | null)[]): Buffer {
  let size = 2 + Math.max(documents.length - 1, 0);
  for (const d of documents) size += d === null ? 4 : Buffer.byteLength(d);
  const bytes = Buffer.allocUnsafe(size);
  let at = bytes.write('[', 0, 'latin1');
  documents.forEach((d, i) => {
    if (i > 0) at += bytes.write(',', at, 'latin1');
    at += bytes.write(d ?? 'null', at, 'utf8');
  });
  bytes.write(']', at, 'latin1');
  return bytes;
}
