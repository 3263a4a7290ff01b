// The dead letters the read-side benches seed: a SELECT over generate_series($1, $2) that yields
// SYNTHETIC_COLUMNS, one row per g, with times counted back from $3 (the seed's "now"): the same
// rows for the same g and $3 whichever way they are loaded (bench/bulkLoadDeadLetters.ts). Eight
// event types, four queues, five sources, six error kinds; one in ten rows has an ordering key; messages whose signatures repeat, with a rare one every
// 1,000 rows; payloads with a customer id and tier; created_at spread over the last 30 days.
//
// `mix` picks the statuses: 'read' is the read bench's 40% PENDING, 10% EXHAUSTED, 30% SUCCEEDED,
// 10% RESOLVED, 10% DISCARDED; 'finished' is what a drain leaves behind (80% SUCCEEDED, 10% RESOLVED,
// 10% DISCARDED), the history behind the drain benches' backlog.

export type StatusMix = 'read' | 'finished';

export const SYNTHETIC_COLUMNS = [
  'event_type', 'queue', 'source', 'ordering_key', 'ordering_seq', 'payload', 'headers', 'error_kind',
  'error_message', 'error_stack', 'status', 'attempts', 'next_attempt_at', 'created_at', 'updated_at',
] as const;

const STATUS: Record<StatusMix, string> = {
  read: `case when (g * 7) % 100 < 40 then 'PENDING' when (g * 7) % 100 < 50 then 'EXHAUSTED'
               when (g * 7) % 100 < 80 then 'SUCCEEDED' when (g * 7) % 100 < 90 then 'RESOLVED' else 'DISCARDED' end`,
  finished: `case when (g * 7) % 100 < 80 then 'SUCCEEDED' when (g * 7) % 100 < 90 then 'RESOLVED' else 'DISCARDED' end`,
};

/**
 * How created_at follows g: 'scattered' steps 7,919 s per row around the 30 days, so neighbouring
 * rows (and heap pages) are weeks apart; `{ inOrderOf: rows }` spreads `rows` rows over the 30 days
 * in the order of g, as a table that receives events as they happen lays them out.
 */
export type CreatedOrder = 'scattered' | { inOrderOf: number };

const createdSql = (order: CreatedOrder) =>
  order === 'scattered'
    ? `$3::timestamptz - ((g * 7919) % 2592000) * interval '1 second'`
    : `$3::timestamptz - interval '30 days' + g * ${2_592_000 / order.inOrderOf} * interval '1 second'`;

/** With `withId`, the first column is g itself, as the id (bench/bulkLoadDeadLetters.ts gives ids). */
export function syntheticDeadLettersSelect(mix: StatusMix = 'read', withId = false, order: CreatedOrder = 'scattered'): string {
  return `
select ${withId ? 'g, ' : ''}(array['order.placed','order.shipped','payment.captured','user.signup','invoice.sent','stock.reserved','email.bounced','refund.issued'])[1 + g % 8],
       (array['orders','payments','users','default'])[1 + g % 4],
       (array['checkout','billing','web','warehouse','crm'])[1 + g % 5],
       case when g % 10 = 0 then 'cust-' || (g % 5000) end,
       case when g % 10 = 0 then g end,
       jsonb_build_object('orderId', g, 'customer', jsonb_build_object('id', 'c-' || (g % 50000),
         'tier', (array['gold','silver','bronze','free'])[1 + (g / 7) % 4]), 'amount', (g % 997) + 0.5,
         'items', jsonb_build_array(g % 13, g % 17)),
       jsonb_build_object('topic', 'orders', 'partition', g % 12, 'offset', g),
       (array['DOWNSTREAM_API','TIMEOUT','VALIDATION','SCHEMA_MISMATCH','CRASH','UNKNOWN']::"ErrorKind"[])[1 + g % 6],
       case when g % 1000 = 7 then 'checksum mismatch in ledger batch ' || g
            else case g % 6
              when 0 then 'HTTP ' || (500 + g % 4) || ' from inventory-service (request ' || g || ')'
              when 1 then 'timeout after ' || (1000 * (1 + g % 30)) || ' ms calling ' || md5(g::text)::uuid
              when 2 then 'field ''' || (array['email','name','amount'])[1 + g % 3] || ''' invalid at ' || to_char($3::timestamptz - g * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
              when 3 then 'schema v' || (g % 4) || ' expected, got object 0x' || to_hex(g * 7919)
              when 4 then 'worker ' || (g % 64) || ' crashed: out of memory'
              else 'unknown failure code ' || (g % 100) end end,
       case when g % 6 = 4 then 'Error: crashed' || chr(10) || '    at handler (/app/src/handlers/h' || (g % 50) || '.ts:' || (g % 300) || ')' end,
       s.status::"DeadLetterStatus",
       case when s.status = 'PENDING' then g % 5 else 1 + g % 10 end,
       case when s.status = 'PENDING' then $3::timestamptz + ((g % 3600) * interval '1 second') end,
       c.created, c.created + interval '1 minute'
  from generate_series($1::bigint, $2::bigint) g,
       lateral (select ${STATUS[mix]} as status) s,
       lateral (select ${createdSql(order)} as created) c`;
}
