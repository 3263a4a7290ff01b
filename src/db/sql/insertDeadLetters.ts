import { queryPrepared, type Db } from '../createDb.ts';
import type { ErrorKind } from '../../generated/prisma/enums.ts';

/** A validated row, with the payload and headers already serialised once. */
export interface ValidRecord {
  eventType: string;
  payloadJson: string;
  headersJson: string | null;
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
 * directly, prepared (see queryPrepared).
 */
export async function insertDeadLetters(db: Db, rows: ValidRecord[], actor: string): Promise<InsertedRow[]> {
  const inserted = await queryPrepared<{ idx: number; id: string | null; created: boolean }>(db, 'insert_dead_letters', INSERT_DEAD_LETTERS, [
    // Payloads and headers go as one JSON array each: already-serialised JSON joins without the
    // escaping a jsonb[] literal needs, and PostgreSQL parses each array once.
    `[${rows.map((r) => r.payloadJson).join(',')}]`,
    `[${rows.map((r) => r.headersJson ?? 'null').join(',')}]`,
    ...COLUMNS.map((key) => rows.map((r) => r[key])),
    actor,
  ]);
  return inserted.map((r) => ({ idx: r.idx, id: r.id === null ? null : BigInt(r.id), created: r.created }));
}

const COLUMNS = [
  'eventType', 'errorKind', 'errorMessage', 'errorStack', 'queue', 'source',
  'orderingKey', 'orderingSeq', 'occurredAt', 'dedupeKey', 'maxAttempts', 'nextAttemptAt',
] as const satisfies readonly (keyof ValidRecord)[];

const INSERT_DEAD_LETTERS = `
with input as materialized (
  select x.*, (x.ord - 1)::int as idx, $1::jsonb -> (x.ord - 1)::int as payload,
         nullif($2::jsonb -> (x.ord - 1)::int, 'null') as headers,
         -- The sequence is looked up once (an InitPlan), not per row: 3 us a row otherwise.
         nextval((select pg_get_serial_sequence('dead_letters', 'id')::regclass)) as new_id
    from unnest($3::text[], $4::"ErrorKind"[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                $10::bigint[], $11::timestamptz[], $12::text[], $13::int[], $14::timestamptz[])
         with ordinality as x(event_type, error_kind, error_message, error_stack, queue, source,
                              ordering_key, ordering_seq, occurred_at, dedupe_key, max_attempts, next_attempt_at, ord)),
ins as (
  insert into dead_letters (id, event_type, payload, headers, error_kind, error_message, error_stack,
                            queue, source, ordering_key, ordering_seq, occurred_at, dedupe_key,
                            max_attempts, next_attempt_at)
  select new_id, event_type, payload, coalesce(headers, '{}'), coalesce(error_kind, 'UNKNOWN'),
         coalesce(error_message, ''), error_stack, coalesce(queue, 'default'), coalesce(source, 'unknown'),
         ordering_key, ordering_seq, coalesce(occurred_at, now()), dedupe_key, max_attempts,
         coalesce(next_attempt_at, now())
    from input order by idx
  on conflict (dedupe_key) do nothing
  returning id, dedupe_key),
history as (
  insert into dead_letter_actions (dead_letter_id, action, actor)
  select id, 'RECORDED', $15::text from ins)
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
