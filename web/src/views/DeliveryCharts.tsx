// Deliveries per minute, success rate and the target's p50/p95 response time, per event type or per
// target, over the last hour or day: read from the delivery rollups (deliveryStats), re-read every
// 10 s and whenever the view around it says something moved.
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { useQuery } from 'urql';
import { graphql } from '../graphql.ts';
import { ErrorNote, fmt, Loading } from '../ui.tsx';

const LinesChart = lazy(() => import('./Chart.tsx').then((m) => ({ default: m.LinesChart })));

const DeliveryStatsQuery = graphql(`
  query DeliveryStats($window: DeliveryWindow!, $groupBy: DeliveryGrouping!) {
    deliveryStats(window: $window, groupBy: $groupBy) {
      stepMinutes stepStarts
      series { key deliveries succeeded successRate p50Ms p95Ms perMinute }
    }
  }
`);

type Window = 'HOUR' | 'DAY';
const WINDOW_LABEL: Record<Window, string> = { HOUR: 'Last hour', DAY: 'Last 24 h' };
const POLL_MS = 10_000;
/** Lines drawn; the table lists every key. */
const MAX_LINES = 6;

const ms = (x: number | null) => (x == null ? '—' : x < 10 ? `${x.toFixed(1)} ms` : x < 10_000 ? `${fmt(Math.round(x))} ms` : `${(x / 1000).toFixed(1)} s`);
const pct = (x: number | null) => (x == null ? '—' : `${(x * 100).toFixed(1)}%`);

export function DeliveryCharts({ groupBy, refreshAt = 0 }: { groupBy: 'EVENT_TYPE' | 'TARGET'; refreshAt?: number }) {
  const [span, setSpan] = useState<Window>('HOUR');
  const [result, refetch] = useQuery({ query: DeliveryStatsQuery, variables: { window: span, groupBy } });
  useEffect(() => {
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), POLL_MS);
    return () => clearInterval(timer);
  }, [refetch]);
  useEffect(() => {
    if (refreshAt) refetch({ requestPolicy: 'network-only' });
  }, [refreshAt, refetch]);
  const stats = result.data?.deliveryStats;
  const noun = groupBy === 'TARGET' ? 'target' : 'event type';
  const lines = useMemo(() => stats?.series.slice(0, MAX_LINES).map((s) => ({ label: s.key || '(in process)', values: s.perMinute })) ?? [], [stats]);
  const minutes = stats ? stats.stepStarts.length * stats.stepMinutes : 1;
  const id = `deliveries-${groupBy}`;
  return (
    <section aria-labelledby={id} data-testid={`delivery-charts-${groupBy}`}>
      <h2 id={id}>Deliveries by {noun}</h2>
      <div role="group" aria-label="Time window" className="window-switch">
        {(['HOUR', 'DAY'] as const).map((w) => (
          <button key={w} type="button" aria-pressed={span === w} onClick={() => setSpan(w)} data-testid={`delivery-window-${w}`}>{WINDOW_LABEL[w]}</button>
        ))}
      </div>
      <ErrorNote error={result.error} />
      {!stats ? <Loading what="delivery charts" /> : stats.series.length === 0 ? (
        <p className="muted" data-testid="no-deliveries">No deliveries in the {span === 'HOUR' ? 'last hour' : 'last 24 hours'}.</p>
      ) : (
        <>
          <Suspense fallback={<div className="chart" />}>
            <LinesChart
              label={`Deliveries per minute by ${noun}, ${WINDOW_LABEL[span].toLowerCase()}, in steps of ${stats.stepMinutes} min`}
              times={stats.stepStarts} lines={lines} width={900} height={220}
            />
          </Suspense>
          <table className="plain-table" data-testid="delivery-table">
            <caption className="sr-only">Deliveries by {noun}, {WINDOW_LABEL[span].toLowerCase()}</caption>
            <thead>
              <tr>
                <th scope="col">{groupBy === 'TARGET' ? 'Target' : 'Event type'}</th><th scope="col">Deliveries</th><th scope="col">Per minute</th>
                <th scope="col">Success rate</th><th scope="col">p50</th><th scope="col">p95</th>
              </tr>
            </thead>
            <tbody>
              {stats.series.map((s) => (
                <tr key={s.key} data-testid="delivery-row">
                  <th scope="row" className="mono ellipsis" title={s.key}>{s.key || '(in process)'}</th>
                  <td className="num">{fmt(s.deliveries)}</td>
                  <td className="num">{(s.deliveries / minutes).toFixed(s.deliveries / minutes < 10 ? 2 : 0)}</td>
                  <td className="num" data-testid="success-rate">{pct(s.successRate)}</td>
                  <td className="num">{ms(s.p50Ms)}</td>
                  <td className="num" data-testid="p95">{ms(s.p95Ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">Percentiles come from log-spaced buckets: within 9.5% of the exact value. Each point is a {stats.stepMinutes === 1 ? 'minute' : `${stats.stepMinutes}-minute step`}.</p>
        </>
      )}
    </section>
  );
}
