import { useEffect } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { graphql, readFragment, type ResultOf } from '../graphql.ts';
import { ago, ErrorNote, fmt, Loading, StatusBadge } from '../ui.tsx';

export const RedriveFields = graphql(`
  fragment RedriveFields on Redrive {
    id status total processed requeued skipped progress ratePerSecond reason error createdBy createdAt finishedAt filter force resetAttempts
    startRatePerSecond maxRatePerSecond rampSeconds currentRatePerSecond pauseWhenFailureRateAbove windowSize pausedBy pausedReason
  }
`);

const RedrivesQuery = graphql(
  `
  query Redrives { redrives(first: 100) { ...RedriveFields } }
`,
  [RedriveFields],
);

export default function Redrives() {
  const [result, refetch] = useQuery({ query: RedrivesQuery });
  // Progress moves every batch: re-read every 2 s while the page is open.
  useEffect(() => {
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), 2_000);
    return () => clearInterval(timer);
  }, [refetch]);
  if (result.error) return <ErrorNote error={result.error} />;
  if (!result.data) return <Loading what="redrives" />;
  const redrives = readFragment(RedriveFields, result.data.redrives);
  return (
    <div>
      <h1>Redrives</h1>
      <p className="muted">A requeue by filter above the redrive threshold, or with a rate, runs as a throttled redrive. Start one from <Link to="/failures">Failures</Link>.</p>
      {redrives.length === 0 ? <p>No redrives yet.</p> : null}
      <table className="plain-table">
        <thead>
          <tr><th scope="col">Redrive</th><th scope="col">Status</th><th scope="col">Progress</th><th scope="col">Rate</th><th scope="col">By</th><th scope="col">Started</th><th scope="col">Reason</th></tr>
        </thead>
        <tbody>
          {redrives.map((r) => (
            <tr key={r.id}>
              <td><Link to={`/redrives/${r.id}`}>{r.id}</Link></td>
              <td>
                {/* The runner's COMPLETED means every event was requeued, not delivered: its page says what became of them. */}
                {r.status === 'COMPLETED' ? <span className="badge status-requeued">ALL REQUEUED</span> : <StatusBadge status={r.status} />}
                {r.pausedBy === 'GUARD' ? ' by its guard' : ''}
              </td>
              <td><progress value={r.processed} max={Math.max(r.total, 1)} aria-label={`Redrive ${r.id} progress`} /> {fmt(r.processed)} / {fmt(r.total)}</td>
              <td>{rateText(r)}</td>
              <td>{r.createdBy}</td>
              <td title={r.createdAt}>{ago(r.createdAt)}</td>
              <td>{r.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export type RedriveRow = ResultOf<typeof RedriveFields>;

/** "350/s of 1000/s" while a ramp is under way, else the rate. */
export function rateText(r: Pick<RedriveRow, 'currentRatePerSecond' | 'maxRatePerSecond'>): string {
  const now = r.currentRatePerSecond;
  return now !== null && Math.round(now) < r.maxRatePerSecond ? `${Math.round(now)}/s of ${r.maxRatePerSecond}/s` : `${r.maxRatePerSecond}/s`;
}
