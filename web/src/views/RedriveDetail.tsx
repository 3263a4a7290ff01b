import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { graphql, readFragment } from '../graphql.ts';
import { ago, ErrorNote, fmt, Loading, mutationProblem, needs, StatusBadge, useCan, useSession } from '../ui.tsx';
import { RedriveFields } from './Redrives.tsx';

const RedriveQuery = graphql(`query Redrive($id: ID!) { redrive(id: $id) { ...RedriveFields } }`, [RedriveFields]);
const Control = {
  pause: graphql(`mutation PauseRedrive($id: ID!) { pauseRedrive(id: $id) { __typename ... on MutationError { code message } } }`),
  resume: graphql(`mutation ResumeRedrive($id: ID!) { resumeRedrive(id: $id) { __typename ... on MutationError { code message } } }`),
  cancel: graphql(`mutation CancelRedrive($id: ID!) { cancelRedrive(id: $id) { __typename ... on MutationError { code message } } }`),
};
const ACTIVE = new Set(['RUNNING', 'PAUSED']);

export default function RedriveDetail() {
  const { id = '' } = useParams();
  const { api } = useSession();
  const canAct = useCan('OPERATOR');
  const [result, refetch] = useQuery({ query: RedriveQuery, variables: { id } });
  const [error, setError] = useState<unknown>(null);
  const r = result.data?.redrive ? readFragment(RedriveFields, result.data.redrive) : null;
  const active = r ? ACTIVE.has(r.status) : true;
  // Live progress: re-read every second until it finishes.
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), 1_000);
    return () => clearInterval(timer);
  }, [active, refetch]);

  const control = async (what: keyof typeof Control) => {
    setError(null);
    const out = await api.urql.mutation(Control[what], { id }).toPromise();
    const problem = mutationProblem(out);
    if (problem) setError(problem);
    refetch({ requestPolicy: 'network-only' });
  };

  if (result.error) return <ErrorNote error={result.error} />;
  if (result.data && !r) return <p role="alert">There is no redrive {id}. <Link to="/redrives">All redrives</Link></p>;
  if (!r) return <Loading what={`redrive ${id}`} />;
  return (
    <article>
      <p><Link to="/redrives">← Redrives</Link></p>
      <h1>Redrive {r.id} <StatusBadge status={r.status} /></h1>
      <p>
        <progress value={r.processed} max={Math.max(r.total, 1)} aria-label="Progress" data-testid="redrive-progress" />{' '}
        <span data-testid="redrive-counts">{fmt(r.processed)} of {fmt(r.total)} processed ({Math.round(r.progress * 100)}%): {fmt(r.requeued)} requeued, {fmt(r.skipped)} skipped</span>
      </p>
      {r.error ? <p role="alert" className="error-note">{r.error}</p> : null}
      <dl className="facts">
        <dt>Rate</dt><dd>{r.ratePerSecond} per second</dd>
        <dt>Started</dt><dd title={r.createdAt}>{ago(r.createdAt)} by {r.createdBy}</dd>
        <dt>Finished</dt><dd>{r.finishedAt ? ago(r.finishedAt) : '—'}</dd>
        <dt>Reason</dt><dd>{r.reason ?? '—'}</dd>
        <dt>Options</dt><dd>{r.force ? 'force, ' : ''}{r.resetAttempts ? 'reset attempts' : 'keeps attempts'}</dd>
        <dt>Filter</dt><dd><code>{JSON.stringify(r.filter)}</code></dd>
      </dl>
      <div className="actions">
        <button onClick={() => void control('pause')} disabled={!canAct || r.status !== 'RUNNING'} title={canAct ? undefined : needs('OPERATOR')}>Pause</button>
        <button onClick={() => void control('resume')} disabled={!canAct || !['PAUSED', 'FAILED'].includes(r.status)} title={canAct ? undefined : needs('OPERATOR')}>Resume</button>
        <button className="danger" onClick={() => void control('cancel')} disabled={!canAct || !['RUNNING', 'PAUSED', 'FAILED'].includes(r.status)} title={canAct ? undefined : needs('OPERATOR')}>Cancel</button>
      </div>
      <ErrorNote error={error} />
    </article>
  );
}
