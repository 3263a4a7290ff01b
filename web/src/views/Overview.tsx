import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { useLiveStream } from '../api.ts';
import { paramsOf, STATUSES } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { ago, duration, ErrorNote, fmt, Loading, StatusBadge, useSession } from '../ui.tsx';

const Chart = lazy(() => import('./Chart.tsx'));

const CountsChanged = graphql(`
  subscription OverviewCounts { deadLetterStatsChanged { total byStatus { status count } } }
`);

const OverviewQuery = graphql(`
  query Overview($from: DateTime!, $to: DateTime!) {
    deadLetterStats {
      oldestPendingAgeSeconds
      retrySuccessRate
      timeSeries(bucket: HOUR, from: $from, to: $to) { start count }
      topErrors(limit: 8) { signature count firstSeen lastSeen sampleId }
    }
    redrives(first: 10, statuses: [RUNNING, PAUSED]) { id status progress processed total ratePerSecond reason }
  }
`);

const SignatureSeries = graphql(`
  query SignatureSeries($signature: String!, $from: DateTime!, $to: DateTime!) {
    deadLetterStats(filter: { errorSignatures: [$signature] }) { timeSeries(bucket: HOUR, from: $from, to: $to) { start count } }
  }
`);

type Counts = ResultOf<typeof CountsChanged>['deadLetterStatsChanged'];

/** The last 24 whole hours and the current one, fixed per refresh so the queries agree. */
function lastDay() {
  const to = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000);
  return { from: new Date(to.getTime() - 24 * 3_600_000).toISOString(), to: to.toISOString() };
}

export function Overview() {
  const { api } = useSession();
  const [counts, setCounts] = useState<Counts | null>(null);
  const [liveError, setLiveError] = useState<string | null>(null);
  const [range, setRange] = useState(lastDay);
  const [result, refetch] = useQuery({ query: OverviewQuery, variables: range });
  // The figures below the counts are re-read when the counts move, at most every 3 s.
  const lastRefresh = useRef(0);
  const onCounts = useCallback(
    (data: ResultOf<typeof CountsChanged>) => {
      setCounts(data.deadLetterStatsChanged);
      setLiveError(null);
      const now = Date.now();
      if (now - lastRefresh.current > 3_000) {
        lastRefresh.current = now;
        setRange(lastDay());
      }
    },
    [],
  );
  useLiveStream(api, { query: CountsChanged, variables: {}, onData: onCounts, onError: setLiveError });
  // Redrive progress moves without changing counts much: poll while any runs.
  const running = (result.data?.redrives.length ?? 0) > 0;
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), 2_000);
    return () => clearInterval(timer);
  }, [running, refetch]);

  const byStatus = useMemo(() => new Map(counts?.byStatus.map((s) => [s.status, s.count]) ?? []), [counts]);
  const stats = result.data?.deadLetterStats;
  const lastDayTotal = stats?.timeSeries.reduce((sum, b) => sum + b.count, 0);

  return (
    <div className="overview">
      <h1>Overview</h1>
      {liveError ? <ErrorNote error={new Error(liveError)} /> : null}
      <section aria-label="Dead letters by status" className="cards">
        <div className="card total">
          <span className="label">All dead letters</span>
          <span className="value" data-testid="count-total">{counts ? fmt(counts.total) : '…'}</span>
        </div>
        {STATUSES.map((status) => (
          <Link key={status} className="card" to={`/failures?${paramsOf({ status })}`} data-testid={`count-${status}`}>
            <span className="label"><StatusBadge status={status} /></span>
            <span className="value">{counts ? fmt(byStatus.get(status) ?? 0) : '…'}</span>
          </Link>
        ))}
      </section>
      <ErrorNote error={result.error} />
      {!stats ? (
        <Loading what="figures" />
      ) : (
        <>
          <section aria-label="Health" className="cards">
            <div className="card">
              <span className="label">Oldest pending</span>
              <span className="value" data-testid="oldest-pending">{stats.oldestPendingAgeSeconds == null ? 'none' : duration(stats.oldestPendingAgeSeconds)}</span>
            </div>
            <div className="card">
              <span className="label">Delivery success rate</span>
              <span className="value">{stats.retrySuccessRate == null ? '—' : `${(stats.retrySuccessRate * 100).toFixed(1)}%`}</span>
            </div>
            <div className="card">
              <span className="label">Failures, last 24 h</span>
              <span className="value">{fmt(lastDayTotal ?? 0)}</span>
            </div>
            <Link className="card" to="/redrives">
              <span className="label">Redrives running</span>
              <span className="value">{fmt(result.data!.redrives.filter((r) => r.status === 'RUNNING').length)}</span>
            </Link>
          </section>
          <section aria-labelledby="per-hour">
            <h2 id="per-hour">Failures per hour</h2>
            <Suspense fallback={<div className="chart" />}>
              <Chart label="Failures per hour over the last 24 hours" times={stats.timeSeries.map((b) => b.start)} counts={stats.timeSeries.map((b) => b.count)} width={900} height={220} />
            </Suspense>
          </section>
          {result.data!.redrives.length ? (
            <section aria-labelledby="running-redrives">
              <h2 id="running-redrives">Redrives in progress</h2>
              <ul className="plain">
                {result.data!.redrives.map((r) => (
                  <li key={r.id}>
                    <Link to={`/redrives/${r.id}`}>Redrive {r.id}</Link> <StatusBadge status={r.status} />{' '}
                    <progress value={r.processed} max={Math.max(r.total, 1)} aria-label={`Redrive ${r.id} progress`} /> {fmt(r.processed)} / {fmt(r.total)} at {r.ratePerSecond}/s
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
          <section aria-labelledby="top-errors">
            <h2 id="top-errors">Top errors</h2>
            {stats.topErrors.length === 0 ? <p className="muted">No failures yet.</p> : null}
            <table className="plain-table">
              <thead>
                <tr><th scope="col">Error signature</th><th scope="col">Count</th><th scope="col">Last 24 h</th><th scope="col">Last seen</th></tr>
              </thead>
              <tbody>
                {stats.topErrors.map((e) => (
                  <tr key={e.signature}>
                    <td><Link to={`/failures?${paramsOf({ signature: e.signature })}`} className="mono">{e.signature || '(empty message)'}</Link></td>
                    <td>{fmt(e.count)}</td>
                    <td><Sparkline signature={e.signature} range={range} /></td>
                    <td title={e.lastSeen}>{ago(e.lastSeen)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </>
      )}
    </div>
  );
}

function Sparkline({ signature, range }: { signature: string; range: { from: string; to: string } }) {
  const [result] = useQuery({ query: SignatureSeries, variables: { signature, ...range } });
  const series = result.data?.deadLetterStats.timeSeries;
  if (!series) return <span className="spark" />;
  return (
    <Suspense fallback={<span className="spark" />}>
      <Chart spark label={`Hourly count of ${signature}`} times={series.map((b) => b.start)} counts={series.map((b) => b.count)} width={120} height={28} />
    </Suspense>
  );
}
