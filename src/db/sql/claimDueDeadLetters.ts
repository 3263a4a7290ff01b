import { Prisma, type RetryPolicy } from '../../generated/prisma/client.ts';
import type { Db } from '../createDb.ts';
import { parseJsonKeepingNumbers } from '../exactJson.ts';
import { runSql } from '../runSql.ts';
import { integerLiteral } from './integerLiteral.ts';
import { PENDING_TYPES, policyOf, UNFINISHED_STATUSES } from './policyOf.ts';
import { stamp } from './stamp.ts';

export interface ClaimParams {
  /** Most rows this claim may take. */
  limit: number;
  /** Recorded as lease_owner and on attempts. */
  workerId: string;
  leaseSeconds: number;
  /** Types with an in-process handler: deliverable even when their policy has no target. */
  inProcessEventTypes: readonly string[];
}

export interface ClaimedDeadLetter {
  id: bigint;
  eventType: string;
  queue: string;
  source: string;
  orderingKey: string | null;
  /**
   * The payload as stored, as JSON text (jsonb's): what a delivery sends. Exact where `payload` is
   * not: a number JavaScript cannot carry (12345678901234567890, 0.1000000000000000055511151231257827)
   * goes out as it came in.
   */
  payloadJson: string;
  /** The payload parsed, on first read (in-process handlers; a redrive to source's body wrapper). */
  readonly payload: unknown;
  headers: unknown;
  errorKind: string;
  errorMessage: string;
  /** Attempts made including this one (counted at claim). */
  attempts: number;
  maxAttempts: number | null;
  leaseToken: string;
  occurredAt: Date;
  /** The policy the claim read, in the same statement: the one this delivery follows. */
  policy: RetryPolicy;
  /** Times the event was requeued after it SUCCEEDED; part of the webhook-id. */
  deliveryGeneration: number;
  /** Where a bridge took it from (dead_letters.origin), or null. */
  origin?: unknown;
  /** Requeued to its source: delivered to its origin, not to the policy's target. */
  isToSource?: boolean;
}

interface ClaimedRow {
  id: bigint;
  event_type: string;
  queue: string;
  source: string;
  ordering_key: string | null;
  /** jsonb's text (dead_letters.payload is NOT NULL). */
  payload: string;
  headers: unknown;
  error_kind: string;
  error_message: string;
  attempts: number;
  max_attempts: number | null;
  lease_token: string;
  occurred_at: Date;
  status: string;
  delivery_generation: number;
  deliver_to_source: boolean | null;
  origin: unknown;
  /** On one row of each event type; null on the others. */
  policy: PolicyJson | null;
}

/** A retry_policies row as to_jsonb writes it. */
interface PolicyJson {
  event_type: string;
  max_attempts: number;
  backoff: RetryPolicy['backoff'];
  base_delay_ms: number;
  max_delay_ms: number;
  timeout_ms: number;
  paused: boolean;
  ordered: boolean;
  concurrency: number | null;
  target_kind: string | null;
  target_settings: RetryPolicy['targetSettings'];
  allow_private_target: boolean;
  permanent_status_codes: number[];
  permanent_error_kinds: RetryPolicy['permanentErrorKinds'];
  created_at: string;
  updated_at: string;
  updated_by: string | null;
}

/** Above this many deliverable types, one scan in due order replaces the per-type merge. */
export const MERGE_TYPE_LIMIT = 64;

export class ClaimLimitExceededError extends Error {
  override name = 'ClaimLimitExceededError';
}

/**
 * Claims due rows in one statement: PENDING rows whose time has come and PROCESSING rows whose
 * lease expired (a crashed or stalled worker). Each gets a lease with a fresh fencing token and
 * its attempt is counted now, so a poison event that kills the process still runs out of
 * attempts: an expired lease on the last attempt ends EXHAUSTED here (with a LEASE_LOST attempt
 * row) instead of being claimed again, and an expired lease of a type that is now paused or has
 * no target goes back to PENDING (held, like its siblings) instead of staying PROCESSING.
 * Skips paused types and types with neither a target nor an in-process handler; for ordered
 * types only the head of each ordering key is eligible (an EXHAUSTED head blocks its key too); the
 * per-type concurrency limit is applied within the batch
 * against leases already held (best effort across processes that claim at the same instant).
 */
export async function claimDueDeadLetters(db: Db, p: ClaimParams): Promise<ClaimedDeadLetter[]> {
  const types = [...p.inProcessEventTypes];
  const deliverable = await deliverableTypes(db, types);
  // Why the shape:
  //  * MATERIALIZED: PostgreSQL inlines a single-use CTE even with FOR UPDATE, and an inlined
  //    LIMIT can be re-run as a semi-join and claim more than n rows (reliability.md C1).
  //  * Expired leases and due rows are separate locking scans: an OR would defeat both indexes.
  //    Up to 2n rows may be locked for the statement's duration; only n are updated, the rest
  //    unlock at commit.
  //  * Due rows are read per deliverable type (see pendingSql), so rows held back — a paused type,
  //    a type with no target — are never scanned, however many there are.
  //  * The policy of an expired lease is the type's own row, else the default '*', read by a
  //    LATERAL subquery. Only the state row is locked; EvalPlanQual re-checks the locked row alone
  //    (C2), and a policy read a moment early is harmless.
  const rows = await runSql<ClaimedRow>(db, Prisma.sql`
    with expired as materialized (
      select d.id, d.event_type, d.lease_expires_at as due_at, d.lease_owner as old_owner, d.attempts as old_attempts,
             d.attempts >= coalesce((select w.max_attempts from dead_letters w where w.id = d.id), e.max_attempts) as is_spent,
             (e.paused or (e.target_kind is null and not d.event_type = any(${types}::text[]) and d.deliver_to_source is null)) as is_held
        from dead_letter_states d,
             lateral ${policyOf('d.event_type')} e
       where d.status = 'PROCESSING' and d.lease_expires_at < now()
       order by d.lease_expires_at, d.id
       limit ${literal(p.limit)}
       for update of d skip locked),
    pending as materialized (${pendingSql(deliverable, p.limit)}),
    found as (select id, event_type, due_at from expired union all select id, event_type, due_at from pending),
    -- Each type's policy, read once per claim (not once per row).
    policy as materialized (
      select t.event_type, e.concurrency, to_jsonb(e) as policy
        from (select distinct event_type from found) t, lateral ${policyOf('t.event_type')} e),
    candidates as (
      select c.id, c.event_type, c.due_at,
             row_number() over (partition by c.event_type order by c.due_at, c.id) as rank_in_type,
             p.concurrency as type_limit
        from found c join policy p on p.event_type = c.event_type),
    in_flight as (
      -- Counted once per claim, for the types that have a limit. A count per candidate read every
      -- in-flight event (the lease index holds all types) once per candidate: a claim took 24 ms
      -- with 2,000 events in flight and 96 ms with 10,000, against 8 ms now (bench:retry:claim).
      -- The EXISTS is a one-time filter: with no limited type among the candidates the lease index
      -- is not read at all. Without it, statistics taken before the leases (one row estimated) led
      -- to a nested loop over every held lease: 60–80 ms a claim with 30,000 held.
      select h.event_type, count(*) as n from dead_letter_states h
       where exists (select from candidates c where c.type_limit is not null)
         and h.status = 'PROCESSING' and h.lease_expires_at >= now()
         and h.event_type in (select c.event_type from candidates c where c.type_limit is not null)
       group by h.event_type),
    chosen as (
      select c.id from candidates c left join in_flight f on f.event_type = c.event_type
       where c.type_limit is null or c.rank_in_type <= c.type_limit - coalesce(f.n, 0)
       order by c.due_at, c.id
       limit ${literal(p.limit)}),
    lost as (
      insert into delivery_attempts (dead_letter_id, attempt_number, worker_id, started_at, duration_ms, outcome, error_message)
      select x.id, x.old_attempts, x.old_owner, now(), 0, 'LEASE_LOST', 'lease expired before the attempt finished'
        from expired x join chosen c on c.id = x.id),
    claimed as (
      update dead_letter_states d
         set status = case when x.is_spent then 'EXHAUSTED' when x.is_held then 'PENDING' else 'PROCESSING' end::"DeadLetterStatus",
             attempts = case when x.is_spent or x.is_held then d.attempts else d.attempts + 1 end,
             next_attempt_at = case when x.is_spent then null when x.is_held then now() else d.next_attempt_at end,
             lease_owner = case when x.is_spent or x.is_held then null else ${p.workerId}::text end,
             lease_token = case when x.is_spent or x.is_held then null else gen_random_uuid() end,
             lease_expires_at = case when x.is_spent or x.is_held then null
                                     else now() + ${p.leaseSeconds}::int * interval '1 second' end,
             ${stamp('d')}
        from chosen c left join expired x on x.id = c.id
       where d.id = c.id
      returning d.id, d.event_type, d.ordering_key, d.attempts, d.lease_token::text, d.status::text, d.delivery_generation, d.deliver_to_source)
    -- The policy is read here, in the claim's own snapshot, and travels with the event: a policy
    -- created or changed a moment ago is the one delivered, never a cached copy. The event's
    -- write-once columns (payload, headers, error) come from dead_letters by primary key: read,
    -- never written. The payload comes as its text, sent as it is (see ClaimedDeadLetter.payloadJson).
    select c.*, w.queue, w.source, w.origin, w.payload::text as payload, w.headers, w.error_kind::text, w.error_message, w.max_attempts, w.occurred_at,
           case when row_number() over (partition by c.event_type) = 1 then p.policy end as policy
      from claimed c join dead_letters w on w.id = c.id join policy p on p.event_type = c.event_type order by c.id`, { name: claimName(deliverable, p.limit) });
  // C1 guard: a plan change that re-runs the locking scan must fail loudly, never over-claim.
  if (rows.length > p.limit) {
    throw new ClaimLimitExceededError(`claim returned ${rows.length} rows for a limit of ${p.limit}`);
  }
  // Each type's policy comes on one of its rows only, so a claim of 100 writes out and parses it
  // once per type instead of once per event; the events of a type share the one object.
  const policies = new Map<string, RetryPolicy>();
  for (const r of rows) if (r.policy) policies.set(r.event_type, toRetryPolicy(r.policy));
  return rows.filter((r) => r.status === 'PROCESSING').map((r) => toClaimedDeadLetter(r, policies.get(r.event_type)!));
}

/**
 * The claim's text depends on the batch size, on how many types there are and, up to
 * MERGE_TYPE_LIMIT, on which of them are ordered (a bit each); so does its prepared name.
 */
function claimName(types: readonly DeliverableType[], limit: number): string {
  if (types.length > MERGE_TYPE_LIMIT) return `claim_many_${limit}`;
  const ordered = types.reduce((mask, t, i) => (t.ordered ? mask | (1n << BigInt(i)) : mask), 0n);
  const sourceOnly = types.reduce((mask, t, i) => (t.source_only ? mask | (1n << BigInt(i)) : mask), 0n);
  return `claim_${types.length}_${ordered.toString(16)}_${sourceOnly.toString(16)}_${limit}`;
}

/**
 * A batch size as text in the statement. As a parameter, the prepared statement's generic plan
 * estimates a tenth of the due rows for each LIMIT, costs 45× the custom plan, and PostgreSQL then
 * plans the claim on every run (so does a parameter for whether a type is ordered, which keeps the
 * key-head lookup in the generic plan of every type).
 */
const literal = (n: number) => integerLiteral(n, 1, 'a claim limit');

interface DeliverableType {
  event_type: string;
  ordered: boolean;
  /** No target and no handler: only its events requeued to their source are deliverable. */
  source_only: boolean;
}

/**
 * Event types that have due work to claim: the distinct types among PENDING rows (one index
 * descent each, on dead_letter_states_pending_type_idx) whose policy — their own, else '*' — is not
 * paused and has a target or an in-process handler.
 */
async function deliverableTypes(db: Db, inProcessEventTypes: string[]): Promise<DeliverableType[]> {
  return runSql<DeliverableType>(db, Prisma.sql`
    ${deliverableTypesCte(inProcessEventTypes)}
    select event_type, ordered, source_only from deliverable`, { name: 'deliverable_types' });
}

function deliverableTypesCte(inProcessEventTypes: readonly string[]): Prisma.Sql {
  return Prisma.sql`
    with recursive ${PENDING_TYPES},
    deliverable as (
      select t.event_type, e.ordered, not (e.target_kind is not null or t.event_type = any(${inProcessEventTypes}::text[])) as source_only
        from pending_types t,
             lateral ${policyOf('t.event_type')} e
       where t.event_type is not null and not e.paused
         and (e.target_kind is not null or t.event_type = any(${inProcessEventTypes}::text[])
              -- A type without a target delivers only what was requeued to its source. This walks the
              -- type's PENDING rows on the pending index until it finds one (TODO: a partial index on
              -- deliver_to_source, built concurrently by a backfill step, when a held type's backlog
              -- makes this walk show in bench:retry:claim).
              or exists (select from dead_letter_states s
                          where s.status = 'PENDING' and s.event_type = t.event_type and s.deliver_to_source)))`;
}

/**
 * Milliseconds (by the database's clock) until the earliest PENDING event of a deliverable type
 * that is not due yet becomes due; null when there is none. The retry loop sleeps until then
 * rather than a whole poll interval, so a 300 ms backoff is 300 ms. One index descent per type.
 */
export async function msUntilNextDue(db: Db, inProcessEventTypes: readonly string[]): Promise<number | null> {
  const [row] = await runSql<{ ms: number | null }>(db, Prisma.sql`
    ${deliverableTypesCte(inProcessEventTypes)}
    select ceil(extract(epoch from min(n.next_attempt_at) - now()) * 1000)::float8 as ms
      from deliverable t,
           lateral (select d.next_attempt_at from dead_letter_states d
                     where d.status = 'PENDING' and d.event_type = t.event_type and d.next_attempt_at > now()
                       and (not t.source_only or d.deliver_to_source)
                     order by d.next_attempt_at limit 1) n`, { name: 'ms_until_next_due' });
  return row?.ms ?? null;
}

// For ordered types only the head of each ordering key is eligible: the key's first unfinished
// event (an EXHAUSTED one included) by (coalesce(ordering_seq, -1), id). A LATERAL join names the
// head of the row's key, keyed by (event type, ordering key) alone, so PostgreSQL memoizes it: a
// blocked key's waiting events cost one cache hit each, not an index descent each (at 1M rows
// with 50,000 events behind one EXHAUSTED head, the claim took 254 ms with a per-row NOT EXISTS,
// 26 ms this way; `npm run bench:retry:claim`). `ordered` false skips the lookup.
const keyHead = (ordered: Prisma.Sql) => Prisma.sql`left join lateral (
      select o.id as head_id from dead_letter_states o
       where ${ordered} and o.event_type = d.event_type and o.ordering_key = d.ordering_key
         and o.status in ${UNFINISHED_STATUSES}
       order by coalesce(o.ordering_seq, -1), o.id limit 1) h on true`;
const IS_KEY_HEAD = Prisma.sql`(d.ordering_key is null or h.head_id = d.id)`;

/**
 * The locking scan over due rows of deliverable types, oldest due first, at most `limit`.
 *  * One type (the common drain): its own index scan, locking rows as the LIMIT takes them.
 *  * Several: a Merge Append of one ordered index scan per type picks the 2 × limit oldest
 *    candidates without locking, then those are locked in due order, skipping any another claim
 *    holds, until `limit` are taken. (PostgreSQL drops the order of a locking subquery, so locking
 *    inside the branches would sort and lock `limit` rows of every type.) Twice the limit leaves a
 *    concurrent claim of the same rows a second batch to take.
 *  * More than MERGE_TYPE_LIMIT (planning that many branches costs more than it saves): one scan
 *    in due order that filters by type.
 */
function pendingSql(types: DeliverableType[], limit: number): Prisma.Sql {
  // Whether a type is ordered is part of the text, not a parameter (see literal).
  const toSource = (t: DeliverableType) => (t.source_only ? Prisma.sql` and d.deliver_to_source` : Prisma.empty);
  const due = (t: DeliverableType) => t.ordered
    ? Prisma.sql`from dead_letter_states d ${keyHead(Prisma.sql`true`)}
       where d.status = 'PENDING' and d.event_type = ${t.event_type}::text and d.next_attempt_at <= now() and ${IS_KEY_HEAD}${toSource(t)}`
    : Prisma.sql`from dead_letter_states d
       where d.status = 'PENDING' and d.event_type = ${t.event_type}::text and d.next_attempt_at <= now()${toSource(t)}`;
  if (types.length === 0) return Prisma.sql`select null::bigint as id, null::text as event_type, null::timestamptz as due_at where false`;
  if (types.length === 1) {
    return Prisma.sql`
      select d.id, d.event_type, d.next_attempt_at as due_at ${due(types[0]!)}
       order by d.next_attempt_at, d.id limit ${literal(limit)}
       for update of d skip locked`;
  }
  if (types.length > MERGE_TYPE_LIMIT) {
    const ordered = types.filter((t) => t.ordered).map((t) => t.event_type);
    const isOrdered = Prisma.sql`d.event_type = any(${ordered}::text[])`;
    const sourceOnly = types.filter((t) => t.source_only).map((t) => t.event_type);
    return Prisma.sql`
      select d.id, d.event_type, d.next_attempt_at as due_at from dead_letter_states d ${keyHead(isOrdered)}
       where d.status = 'PENDING' and d.next_attempt_at <= now()
         and d.event_type = any(${types.map((t) => t.event_type)}::text[])
         and (not ${isOrdered} or ${IS_KEY_HEAD})
         and (d.deliver_to_source or not d.event_type = any(${sourceOnly}::text[]))
       order by d.next_attempt_at, d.id limit ${literal(limit)}
       for update of d skip locked`;
  }
  const window = 2 * limit;
  const branches = types.map((t) => Prisma.sql`(
      select d.id, d.next_attempt_at as due_at ${due(t)}
       order by d.next_attempt_at, d.id limit ${literal(window)})`);
  return Prisma.sql`
      select d.id, d.event_type, d.next_attempt_at as due_at
        from (select u.id, u.due_at from (${Prisma.join(branches, ' union all ')}) u
               order by u.due_at, u.id limit ${literal(window)}) c
        join dead_letter_states d on d.id = c.id
       where d.status = 'PENDING' and d.next_attempt_at <= now()
       order by c.due_at, c.id limit ${literal(limit)}
       for update of d skip locked`;
}

function toClaimedDeadLetter(r: ClaimedRow, policy: RetryPolicy): ClaimedDeadLetter {
  const payloadJson = r.payload;
  let parsed: { value: unknown } | undefined;
  return {
    id: r.id,
    eventType: r.event_type,
    queue: r.queue,
    source: r.source,
    orderingKey: r.ordering_key,
    payloadJson,
    get payload() {
      parsed ??= { value: parseJsonKeepingNumbers(payloadJson) };
      return parsed.value;
    },
    headers: r.headers,
    errorKind: r.error_kind,
    errorMessage: r.error_message,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    leaseToken: r.lease_token,
    occurredAt: r.occurred_at,
    policy,
    deliveryGeneration: r.delivery_generation,
    origin: r.origin ?? null,
    isToSource: r.deliver_to_source === true,
  };
}

function toRetryPolicy(p: PolicyJson): RetryPolicy {
  return {
    eventType: p.event_type, maxAttempts: p.max_attempts, backoff: p.backoff, baseDelayMs: p.base_delay_ms,
    maxDelayMs: p.max_delay_ms, timeoutMs: p.timeout_ms, paused: p.paused, ordered: p.ordered, concurrency: p.concurrency,
    targetKind: p.target_kind, targetSettings: p.target_settings, allowPrivateTarget: p.allow_private_target,
    permanentStatusCodes: p.permanent_status_codes, permanentErrorKinds: p.permanent_error_kinds,
    createdAt: new Date(p.created_at), updatedAt: new Date(p.updated_at), updatedBy: p.updated_by,
  };
}
