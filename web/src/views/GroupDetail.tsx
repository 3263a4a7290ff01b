// One error group: its status and counts, the operator moves (acknowledge, resolve, ignore,
// reopen) with a reason, its history, a requeue of every member with the bulk dry run, and its
// members as the failures list filtered to the group.
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { useParams } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';
import { graphql } from '../graphql.ts';
import { ago, ErrorNote, fmt, Loading, messageText, mutationProblem, needs, splitSignature, useCan } from '../ui.tsx';
import { BulkActions } from './BulkActions.tsx';
import { Failures } from './Failures.tsx';
import { GroupStatus } from './Groups.tsx';

const Chart = lazy(() => import('./Chart.tsx'));

const GroupQuery = graphql(`
  query ErrorGroup($id: ID!) {
    errorGroup(id: $id) {
      id status eventType errorKind signature count unresolvedCount firstSeen lastSeen regressedAt note queues sources
      hourly(hours: 48) { start count }
      history { id fromStatus toStatus actor reason note createdAt }
    }
  }
`);

const GroupChanged = graphql(`
  subscription ErrorGroupChanged($filter: ErrorGroupFilter) { errorGroupChanged(filter: $filter) { kind } }
`);

const Acknowledge = graphql(`mutation AcknowledgeGroup($input: ErrorGroupMoveInput!) { acknowledgeErrorGroup(input: $input) { __typename ... on ErrorGroup { id status } ... on MutationError { code message } } }`);
const Resolve = graphql(`mutation ResolveGroup($input: ErrorGroupMoveInput!) { resolveErrorGroup(input: $input) { __typename ... on ErrorGroup { id status } ... on MutationError { code message } } }`);
const Ignore = graphql(`mutation IgnoreGroup($input: ErrorGroupMoveInput!) { ignoreErrorGroup(input: $input) { __typename ... on ErrorGroup { id status } ... on MutationError { code message } } }`);
const Reopen = graphql(`mutation ReopenGroup($input: ErrorGroupMoveInput!) { reopenErrorGroup(input: $input) { __typename ... on ErrorGroup { id status } ... on MutationError { code message } } }`);

/** Each move and the statuses it is legal from (as src/domain/errorGroups.ts). */
const MOVES = [
  { label: 'Acknowledge', doc: Acknowledge, from: ['OPEN'] },
  { label: 'Resolve', doc: Resolve, from: ['OPEN', 'ACKNOWLEDGED', 'IGNORED'] },
  { label: 'Ignore', doc: Ignore, from: ['OPEN', 'ACKNOWLEDGED', 'RESOLVED'] },
  { label: 'Reopen', doc: Reopen, from: ['ACKNOWLEDGED', 'RESOLVED', 'IGNORED'] },
] as const;

export default function GroupDetail() {
  const { id = '' } = useParams();
  const [result, refetch] = useQuery({ query: GroupQuery, variables: { id } });
  const [changed] = useSubscription({ query: GroupChanged, variables: { filter: { ids: [id] } } });
  useEffect(() => {
    if (changed.data) refetch({ requestPolicy: 'network-only' });
  }, [changed.data, refetch]);
  const members = useMemo(() => ({ groupId: id }), [id]);
  const [bulkOpen, setBulkOpen] = useState(false);
  const canAct = useCan('OPERATOR');
  if (result.error) return <ErrorNote error={result.error} />;
  const g = result.data?.errorGroup;
  if (result.data && !g) return <p>No error group {id}.</p>;
  if (!g) return <Loading what={`error group ${id}`} />;
  const { message, frames } = splitSignature(g.signature);
  return (
    <div className="group-detail">
      <h1><span className="kind">{g.errorKind}</span> {messageText(message)}</h1>
      {frames.length > 0 ? <pre className="frames" data-testid="group-frames">{frames.join('\n')}</pre> : null}
      <p data-testid="group-status">
        <GroupStatus status={g.status} regressedAt={g.regressedAt} /> · {g.eventType} · <strong>{fmt(g.count)}</strong> events, <strong data-testid="group-unresolved">{fmt(g.unresolvedCount)}</strong> unresolved
        · first seen <span title={g.firstSeen}>{ago(g.firstSeen)}</span> · last seen <span title={g.lastSeen}>{ago(g.lastSeen)}</span>
        {g.regressedAt ? <> · regressed <span title={g.regressedAt}>{ago(g.regressedAt)}</span></> : null}
      </p>
      <p className="muted">Queues: {g.queues.join(', ')} · Sources: {g.sources.join(', ')}{g.note ? <> · Note: {g.note}</> : null}</p>
      <Suspense fallback={<span className="spark" />}>
        <Chart label="Events per hour over the last 48 hours" times={g.hourly.map((h) => h.start)} counts={g.hourly.map((h) => h.count)} width={900} height={160} />
      </Suspense>
      <GroupMoves id={g.id} status={g.status} onMoved={() => refetch({ requestPolicy: 'network-only' })} />
      <div className="toolbar">
        <button onClick={() => setBulkOpen(true)} disabled={!canAct} title={canAct ? undefined : needs('OPERATOR')}>Requeue, resolve or discard the group’s events…</button>
      </div>
      {bulkOpen ? <BulkActions filter={members} matching={null} onClose={() => { setBulkOpen(false); refetch({ requestPolicy: 'network-only' }); }} /> : null}
      <section aria-label="History">
        <h2>History</h2>
        <ol className="timeline" data-testid="group-history">
          {g.history.map((h) => {
            // The entry that created the group is when it was first seen: the header's firstSeen, the
            // oldest member's time. The entry itself was written when the folder got to it (later, for
            // events inserted with an old created_at, backfilled or folded after an outage).
            const at = h.fromStatus === null ? g.firstSeen : h.createdAt;
            return (
            <li key={h.id}>
              <span title={at}>{ago(at)}</span> · {h.fromStatus ? `${h.fromStatus} → ` : ''}<strong>{h.toStatus}</strong> by {h.actor}
              {h.reason ? <> — {h.reason}</> : null}{h.note ? <span className="muted"> (note: {h.note})</span> : null}
            </li>
            );
          })}
        </ol>
      </section>
      <Failures fixed={members} heading="Events in this group" />
    </div>
  );
}

function GroupMoves({ id, status, onMoved }: { id: string; status: string; onMoved: () => void }) {
  const canAct = useCan('OPERATOR');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<Error | null>(null);
  const [, run] = useMutation(Acknowledge);
  const [, resolve] = useMutation(Resolve);
  const [, ignore] = useMutation(Ignore);
  const [, reopen] = useMutation(Reopen);
  const runners = { Acknowledge: run, Resolve: resolve, Ignore: ignore, Reopen: reopen } as const;
  const move = async (label: keyof typeof runners) => {
    setError(null);
    const r = await runners[label]({ input: { id, reason: reason.trim() || undefined } });
    const problem = mutationProblem(r);
    if (problem) return setError(problem);
    setReason('');
    onMoved();
  };
  return (
    <section aria-label="Group status" className="moves">
      <label>Reason <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={2000} /></label>
      {MOVES.map((m) => {
        const legal = (m.from as readonly string[]).includes(status);
        return (
          <button key={m.label} onClick={() => void move(m.label)} disabled={!canAct || !legal} title={!canAct ? needs('OPERATOR') : legal ? undefined : `not from ${status}`}>
            {m.label}
          </button>
        );
      })}
      <ErrorNote error={error} />
    </section>
  );
}
