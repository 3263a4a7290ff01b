import type { Db } from '../createDb.ts';
import type { ValidRecord } from '../../domain/recordInput.ts';

export interface InsertedRow {
  idx: number;
  id: bigint | null;
  created: boolean;
}

/**
 * One round trip for a whole batch: each column travels as one array parameter (PostgreSQL parses
 * every payload once, as jsonb), ids are drawn up front so RETURNING maps back to input positions,
 * ON CONFLICT (dedupe_key) DO NOTHING makes ingest idempotent (also within a batch), and the
 * RECORDED history rows go in the same statement. Omitted fields take the table's defaults, the
 * same ones a plain SQL INSERT gets.
 */
export async function insertDeadLetters(db: Db, rows: ValidRecord[], actor: string): Promise<InsertedRow[]> {
  const col = <K extends keyof ValidRecord>(key: K) => rows.map((r) => r[key]);
  return db.$queryRaw<InsertedRow[]>`
    with input as materialized (
      select x.*, (x.ord - 1)::int as idx, nextval(pg_get_serial_sequence('dead_letters', 'id')) as new_id
        from unnest(${col('eventType')}::text[], ${col('payloadJson')}::jsonb[], ${col('headersJson')}::jsonb[],
                    ${col('errorKind')}::"ErrorKind"[], ${col('errorMessage')}::text[], ${col('errorStack')}::text[],
                    ${col('queue')}::text[], ${col('source')}::text[], ${col('orderingKey')}::text[],
                    ${col('orderingSeq')}::bigint[], ${col('occurredAt')}::timestamptz[], ${col('dedupeKey')}::text[],
                    ${col('maxAttempts')}::int[], ${col('nextAttemptAt')}::timestamptz[])
             with ordinality as x(event_type, payload, headers, error_kind, error_message, error_stack, queue, source,
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
      select id, 'RECORDED', ${actor}::text from ins)
    select i.idx, coalesce(by_id.id, by_key.id, existing.id) as id, by_id.id is not null as created
      from input i
      left join ins by_id on by_id.id = i.new_id
      -- a duplicate of a row inserted earlier in this same batch (invisible to this statement's snapshot)
      left join lateral (select min(k.id) as id from ins k where by_id.id is null and k.dedupe_key = i.dedupe_key) by_key on true
      left join dead_letters existing on by_id.id is null and existing.dedupe_key = i.dedupe_key
     order by i.idx`;
}
