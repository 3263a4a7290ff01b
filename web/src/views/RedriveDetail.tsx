import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { graphql, readFragment } from '../graphql.ts';
import { ago, ErrorNote, fmt, Loading, mutationProblem, needs, StatusBadge, useCan, useSession } from '../ui.tsx';
import { badgeOf, RedriveOutcomeFields, RedriveOutcomes, summaryOf } from './RedriveOutcomes.tsx';
import { rateText, RedriveFields } from './Redrives.tsx';

const RedriveQuery = graphql(
  `query Redrive($id: ID!) { redrive(id: $id) { ...RedriveFields ...RedriveOutcomeFields guardWindow { outcomes failures failureRate } } }`,
  [RedriveFields, RedriveOutcomeFields],
);
const Control = {
  pause: graphql(`mutation PauseRedrive($id: ID!) { pauseRedrive(id: $id) { __typename ... on MutationError { code message } } }`),
  resume: graphql(`mutation ResumeRedrive($id: ID!, $limits: RedriveLimitsInput) { resumeRedrive(id: $id, limits: $limits) { __typename ... on MutationError { code message } } }`),
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
  const outcomes = result.data?.redrive ? readFragment(RedriveOutcomeFields, result.data.redrive) : null;
  const active = r ? ACTIVE.has(r.status) : true;
  // Live progress: re-read while the runner works and then until every event it requeued has
  // ended. The outcome counts walk all the events it requeued (about 3 s for 100,000 on a loaded
  // 2-core machine), so the pace slows with its size: every second (2 s once all are requeued) for
  // small redrives, 20 s at 100,000, at most 30 s.
  const everyMs = !outcomes || active || !outcomes.settled ? Math.min(30_000, Math.max(active ? 1_000 : 2_000, (outcomes?.requeued ?? 0) / 5)) : null;
  useEffect(() => {
    if (everyMs === null) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), everyMs);
    return () => clearInterval(timer);
  }, [everyMs, refetch]);

  const [limits, setLimits] = useState({ startRatePerSecond: '', maxRatePerSecond: '', rampSeconds: '', pauseWhenFailureRateAbove: '', windowSize: '' });
  const control = async (what: keyof typeof Control, withLimits = false) => {
    setError(null);
    const given = Object.fromEntries(Object.entries(limits).filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, Number(v)]));
    const out = await api.urql.mutation(Control[what], { id, ...(withLimits ? { limits: given } : {}) }).toPromise();
    const problem = mutationProblem(out);
    if (problem) setError(problem);
    refetch({ requestPolicy: 'network-only' });
  };

  if (result.error) return <ErrorNote error={result.error} />;
  if (result.data && !r) return <p role="alert">There is no redrive {id}. <Link to="/redrives">All redrives</Link></p>;
  if (!r || !outcomes) return <Loading what={`redrive ${id}`} />;
  return (
    <article>
      <p><Link to="/redrives">← Redrives</Link></p>
      <h1>Redrive {r.id} <StatusBadge status={badgeOf(outcomes)} /></h1>
      <p role="status" data-testid="redrive-summary">{summaryOf(outcomes)}</p>
      <p>
        <progress value={r.processed} max={Math.max(r.total, 1)} aria-label="Progress" data-testid="redrive-progress" />{' '}
        <span data-testid="redrive-counts">{fmt(r.processed)} of {fmt(r.total)} processed ({Math.round(r.progress * 100)}%): {fmt(r.requeued)} requeued, {fmt(r.skipped)} skipped</span>
      </p>
      {r.error ? <p role="alert" className="error-note">{r.error}</p> : null}
      {r.status === 'PAUSED' ? (
        <p role="status" className={r.pausedBy === 'GUARD' ? 'error-note' : undefined} data-testid="redrive-paused">
          {r.pausedBy === 'GUARD' ? 'Paused by its guard' : 'Paused by an operator'}{r.pausedReason ? `: ${r.pausedReason}` : '.'}
        </p>
      ) : null}
      <dl className="facts">
        <dt>Rate</dt>
        <dd data-testid="redrive-rate">
          {r.status === 'RUNNING' ? `${rateText(r)} now` : `${r.maxRatePerSecond}/s`}
          {r.rampSeconds > 0 && r.startRatePerSecond < r.maxRatePerSecond ? ` (ramps from ${r.startRatePerSecond}/s to ${r.maxRatePerSecond}/s over ${r.rampSeconds} s, again on every resume)` : ''}
        </dd>
        <dt>Guard</dt>
        <dd data-testid="redrive-guard">
          {r.pauseWhenFailureRateAbove === null
            ? 'none'
            : `pauses itself when more than ${Math.round(r.pauseWhenFailureRateAbove * 100)}% of the last ${fmt(r.windowSize)} deliveries fail` +
              (result.data?.redrive?.guardWindow ? `; now ${fmt(result.data.redrive.guardWindow.failures)} of ${fmt(result.data.redrive.guardWindow.outcomes)} failed` : '')}
        </dd>
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
      {canAct && ['PAUSED', 'FAILED'].includes(r.status) ? (
        <details>
          <summary>Resume with new limits</summary>
          <form onSubmit={(e) => { e.preventDefault(); void control('resume', true); }}>
            <label>Start at (events per second)<input type="number" min={1} placeholder={String(r.startRatePerSecond)} value={limits.startRatePerSecond} onChange={(e) => setLimits({ ...limits, startRatePerSecond: e.target.value })} /></label>
            <label>Maximum (events per second)<input type="number" min={1} placeholder={String(r.maxRatePerSecond)} value={limits.maxRatePerSecond} onChange={(e) => setLimits({ ...limits, maxRatePerSecond: e.target.value })} /></label>
            <label>Ramp over (seconds)<input type="number" min={0} placeholder={String(r.rampSeconds)} value={limits.rampSeconds} onChange={(e) => setLimits({ ...limits, rampSeconds: e.target.value })} /></label>
            <label>Pause itself when the failure share is above (0 to 1)<input type="number" min={0} max={1} step="0.01" placeholder={r.pauseWhenFailureRateAbove === null ? 'no guard' : String(r.pauseWhenFailureRateAbove)} value={limits.pauseWhenFailureRateAbove} onChange={(e) => setLimits({ ...limits, pauseWhenFailureRateAbove: e.target.value })} /></label>
            <label>… of the last (deliveries)<input type="number" min={1} placeholder={String(r.windowSize)} value={limits.windowSize} onChange={(e) => setLimits({ ...limits, windowSize: e.target.value })} /></label>
            <button type="submit">Resume with these limits</button>
          </form>
        </details>
      ) : null}
      <ErrorNote error={error} />
      <RedriveOutcomes id={id} redrive={outcomes} />
    </article>
  );
}
