// Both rollup ledgers summed per group, next to the same groups counted over dead_letters: equal
// when the triggers (or a migration's backfill) kept them exact.
const GROUP = 'bucket, event_type, queue, error_kind::text, status::text';
const SIGNATURE_GROUP = 'bucket, error_signature, event_type, queue, error_kind::text';

interface Queryable {
  query(sql: string): Promise<{ rows: Record<string, unknown>[] }>;
}

interface Group {
  bucket: string;
  event_type: string;
  queue: string;
  error_kind: string;
  n: number;
}
type StatusGroup = Group & { status: string; attempts: number };
type SignatureGroup = Group & { error_signature: string };

export async function ledgersAndScans(db: Queryable) {
  const q = async <T extends Group>(sql: string) =>
    (await db.query(sql)).rows.map((r) => ({ ...r, bucket: (r.bucket as Date).toISOString() }) as T);
  return {
    /** Events and their attempts per hour, type, queue, kind and status. */
    rollups: await q<StatusGroup>(`select ${GROUP}, sum(count)::int as n, sum(attempts)::int as attempts from dead_letter_rollups
                       group by ${GROUP} having sum(count) <> 0 or sum(attempts) <> 0 order by ${GROUP}`),
    scan: await q<StatusGroup>(`select lazarus_rollup_bucket(created_at) as bucket, event_type, queue, error_kind::text, status::text, count(*)::int as n,
                          sum(attempts)::int as attempts
                     from dead_letters_current group by ${GROUP} order by ${GROUP}`),
    /** Events per hour, error signature, type, queue and kind. */
    signatures: await q<SignatureGroup>(`select ${SIGNATURE_GROUP}, sum(count)::int as n from dead_letter_signature_rollups
                          group by ${SIGNATURE_GROUP} having sum(count) <> 0 order by ${SIGNATURE_GROUP}`),
    signatureScan: await q<SignatureGroup>(`select lazarus_rollup_bucket(created_at) as bucket, error_signature, event_type, queue, error_kind::text, count(*)::int as n
                              from dead_letters_current group by ${SIGNATURE_GROUP} order by ${SIGNATURE_GROUP}`),
  };
}
