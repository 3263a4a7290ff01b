import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link } from 'react-router';
import { useQuery, useSubscription } from 'urql';
import { useLiveStream } from '../api.ts';
import { paramsOf, STATUSES } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { HELD_LABEL, heldWhy } from '../held.tsx';
import { DeliveryCharts } from './DeliveryCharts.tsx';
import { ago, duration, ErrorNote, fmt, Loading, messageText, splitSignature, StatusBadge, useSession } from '../ui.tsx';

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
    }
    redrives(first: 10, statuses: [RUNNING, PAUSED]) { id status progress processed total ratePerSecond reason }
    errorGroups(orderBy: UNRESOLVED, first: 8) {
      edges { node { id eventType errorKind signature count unresolvedCount lastSeen hourly(hours: 24) { start count } } }
    }
  }
`);

// Its own request, so the figures above do not wait for it.
const HeldQuery = graphql(`query OverviewHeld { heldEventCounts { eventType policyEventType reason count } }`);

const GroupsChanged = graphql(`subscription OverviewGroups { errorGroupChanged { kind } }`);

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
  const [refreshAt, setRefreshAt] = useState(0);
  const [result, refetchFigures] = useQuery({ query: OverviewQuery, variables: range });
  const [held, refetchHeld] = useQuery({ query: HeldQuery });
  const refetch = useCallback((opts: { requestPolicy: 'network-only' }) => {
    refetchFigures(opts);
    refetchHeld(opts);
  }, [refetchFigures, refetchHeld]);
  // The figures below the counts are re-read when the counts or the error groups move, at most
  // every 3 s, the last move included.
  const lastRefresh = useRef(0);
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const refreshSoon = useCallback(() => {
    if (pending.current) return;
    pending.current = setTimeout(() => {
      pending.current = null;
      lastRefresh.current = Date.now();
      const next = lastDay();
      setRange((r) => (r.to === next.to ? r : next));
      setRefreshAt(lastRefresh.current);
      refetch({ requestPolicy: 'network-only' });
    }, Math.max(0, lastRefresh.current + 3_000 - Date.now()));
  }, [refetch]);
  useEffect(() => () => void (pending.current && clearTimeout(pending.current)), []);
  const onCounts = useCallback(
    (data: ResultOf<typeof CountsChanged>) => {
      setCounts(data.deadLetterStatsChanged);
      setLiveError(null);
      refreshSoon();
    },
    [refreshSoon],
  );
  useLiveStream(api, { query: CountsChanged, variables: {}, onData: onCounts, onError: setLiveError });
  const [groupsChanged] = useSubscription({ query: GroupsChanged });
  useEffect(() => {
    if (groupsChanged.data) refreshSoon();
  }, [groupsChanged.data, refreshSoon]);
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
  const topGroups = result.data?.errorGroups.edges.map((e) => e.node).filter((g) => g.unresolvedCount > 0) ?? [];

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
          <HeldSection counts={held.data?.heldEventCounts ?? null} />
          <section aria-labelledby="per-hour">
            <h2 id="per-hour">Failures per hour</h2>
            <Suspense fallback={<div className="chart" />}>
              <Chart label="Failures per hour over the last 24 hours" times={stats.timeSeries.map((b) => b.start)} counts={stats.timeSeries.map((b) => b.count)} width={900} height={220} />
            </Suspense>
          </section>
          <DeliveryCharts groupBy="EVENT_TYPE" refreshAt={refreshAt} />
          <p><Link to="/targets">Deliveries by target</Link></p>
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
            {/* Unresolved members per error group, kept by the database's folder: what still needs
                someone, without the events that have since succeeded, and without a scan. */}
            <p className="muted">Error groups with the most unresolved events (pending, processing or exhausted) now.</p>
            {topGroups.length === 0 ? <p className="muted" data-testid="no-top-errors">Nothing unresolved.</p> : (
              <table className="plain-table" data-testid="top-errors">
                <thead>
                  <tr><th scope="col">Error</th><th scope="col">Event type</th><th scope="col">Unresolved</th><th scope="col">All events</th><th scope="col">Last 24 h</th><th scope="col">Last seen</th></tr>
                </thead>
                <tbody>
                  {topGroups.map((g) => {
                    const text = messageText(splitSignature(g.signature).message);
                    return (
                      <tr key={g.id} data-testid="top-error">
                        <td className="ellipsis" title={g.signature}>
                          <span className="kind">{g.errorKind}</span> <Link to={`/groups/${g.id}`} className="mono">{text}</Link>
                        </td>
                        <td>{g.eventType}</td>
                        <td className="num">{fmt(g.unresolvedCount)}</td>
                        <td className="num">{fmt(g.count)}</td>
                        <td>
                          <Suspense fallback={<span className="spark" />}>
                            <Chart spark label={`Hourly count of ${text}`} times={g.hourly.map((h) => h.start)} counts={g.hourly.map((h) => h.count)} width={120} height={28} />
                          </Suspense>
                        </td>
                        <td title={g.lastSeen}>{ago(g.lastSeen)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
    </div>
  );
}

type HeldCount = ResultOf<typeof HeldQuery>['heldEventCounts'][number];

/** How many PENDING events wait for something other than time, per type and reason. */
function HeldSection({ counts }: { counts: readonly HeldCount[] | null }) {
  if (!counts) return null;
  const total = counts.reduce((sum, c) => sum + c.count, 0);
  return (
    <section aria-labelledby="held-h">
      <h2 id="held-h">Held: <span data-testid="held-total">{fmt(total)}</span></h2>
      {total === 0 ? <p className="muted">No event waits for a paused type, a missing target or a blocked ordering key.</p> : (
        <table className="plain-table" data-testid="held-counts">
          <thead><tr><th scope="col">Event type</th><th scope="col">Why</th><th scope="col">Held</th></tr></thead>
          <tbody>
            {counts.slice(0, 8).map((c) => (
              <tr key={`${c.eventType} ${c.reason}`}>
                <td><Link to={`/failures?${paramsOf({ type: c.eventType, status: 'PENDING' })}`}>{c.eventType}</Link></td>
                <td title={heldWhy(c, c.eventType)}>{HELD_LABEL[c.reason]}{c.reason === 'BLOCKED_KEY' ? '' : ` (policy ${c.policyEventType})`}</td>
                <td className="num">{fmt(c.count)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
