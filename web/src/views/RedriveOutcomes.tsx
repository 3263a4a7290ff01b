// What became of a redrive's events: the honest summary (the runner's COMPLETED only means every
// event was requeued), counts by outcome, the error groups of its failures, and its events.
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';
import { graphql, type ResultOf, type VariablesOf } from '../graphql.ts';
import { ErrorNote, fmt, splitSignature, StatusBadge, useSession } from '../ui.tsx';

export const RedriveOutcomeFields = graphql(`
  fragment RedriveOutcomeFields on Redrive {
    status total requeued skipped settled
    outcomes { delivered failing exhausted resolved discarded pending deleted }
    errorGroups(first: 5) { count failing exhausted group { id eventType errorKind signature } }
  }
`);

const EventsQuery = graphql(`
  query RedriveEvents($id: ID!, $outcome: RedriveOutcome, $after: String) {
    redrive(id: $id) {
      events(outcome: $outcome, first: 50, after: $after) {
        pageInfo { hasNextPage endCursor }
        edges { node { id status eventType attempts updatedAt error { kind message } } }
      }
    }
  }
`);

type Outcomes = ResultOf<typeof RedriveOutcomeFields>;
type Outcome = NonNullable<VariablesOf<typeof EventsQuery>['outcome']>;
type EventRow = NonNullable<ResultOf<typeof EventsQuery>['redrive']>['events']['edges'][number]['node'];

const OUTCOMES: { key: keyof Outcomes['outcomes'] & string; outcome: Outcome | null; label: string }[] = [
  { key: 'delivered', outcome: 'DELIVERED', label: 'delivered' },
  { key: 'failing', outcome: 'FAILING', label: 'failing, retrying' },
  { key: 'exhausted', outcome: 'EXHAUSTED', label: 'exhausted' },
  { key: 'resolved', outcome: 'RESOLVED', label: 'resolved' },
  { key: 'discarded', outcome: 'DISCARDED', label: 'discarded' },
  { key: 'pending', outcome: 'PENDING', label: 'awaiting delivery' },
  { key: 'deleted', outcome: null, label: 'deleted' },
];

/** The badge: the runner's status, except that COMPLETED says whether the deliveries are done too. */
export function badgeOf(r: Pick<Outcomes, 'status' | 'settled'>): string {
  return r.status === 'COMPLETED' ? (r.settled ? 'DONE' : 'REQUEUED') : r.status;
}

/** One sentence: "Done: 478 delivered, 20 exhausted", "Requeued all 498 — 20 still failing", … */
export function summaryOf(r: Outcomes): string {
  const o = r.outcomes;
  const ended = [`${fmt(o.delivered)} delivered`, `${fmt(o.exhausted)} exhausted`];
  for (const [n, what] of [[o.resolved, 'resolved'], [o.discarded, 'discarded'], [o.deleted, 'deleted']] as const) if (n > 0) ended.push(`${fmt(n)} ${what}`);
  const open = [o.failing > 0 ? `${fmt(o.failing)} still failing` : null, o.pending > 0 ? `${fmt(o.pending)} awaiting delivery` : null].filter(Boolean).join(', ');
  const skipped = r.skipped > 0 ? ` (${fmt(r.skipped)} skipped)` : '';
  if (r.status === 'COMPLETED') return r.settled ? `Done: ${ended.join(', ')}${skipped}` : `Requeued all ${fmt(r.requeued)}${skipped} — ${open}`;
  const requeued = r.status === 'CANCELLED' ? `Cancelled after requeueing ${fmt(r.requeued)} of ${fmt(r.total)}` : `Requeued ${fmt(r.requeued)} of ${fmt(r.total)} so far`;
  return r.requeued === 0 ? requeued : `${requeued}: ${ended.join(', ')}${open ? `, ${open}` : ''}`;
}

export function RedriveOutcomes({ id, redrive: r }: { id: string; redrive: Outcomes }) {
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  return (
    <section aria-labelledby="outcomes-heading">
      <h2 id="outcomes-heading">What became of its events</h2>
      <p className="muted">Of the events it requeued, now. Choose an outcome to list its events below.</p>
      <ul className="outcome-counts" data-testid="redrive-outcomes">
        {OUTCOMES.map(({ key, outcome: o, label }) => (
          <li key={key} data-testid={`outcome-${key}`}>
            {o === null ? (
              <span>{fmt(r.outcomes[key])} {label}</span>
            ) : (
              <button type="button" className="link" aria-pressed={outcome === o} onClick={() => setOutcome(outcome === o ? null : o)}>
                {fmt(r.outcomes[key])} {label}
              </button>
            )}
          </li>
        ))}
      </ul>
      {r.errorGroups.length > 0 ? (
        <>
          <h3>Error groups of its failures</h3>
          <table className="plain-table" data-testid="redrive-error-groups">
            <thead><tr><th scope="col">Events</th><th scope="col">Group</th></tr></thead>
            <tbody>
              {r.errorGroups.map((g) => (
                <tr key={g.group.id}>
                  <td>{fmt(g.count)} <span className="muted">({fmt(g.failing)} failing, {fmt(g.exhausted)} exhausted)</span></td>
                  <td><Link to={`/groups/${g.group.id}`}>{g.group.eventType} · {g.group.errorKind}: {splitSignature(g.group.signature).message}</Link></td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <RedriveEvents id={id} outcome={outcome} version={JSON.stringify(r.outcomes)} />
    </section>
  );
}

/** Its events, 50 at a time; the first page is re-read when the counts move (the page's own refresh). */
function RedriveEvents({ id, outcome, version }: { id: string; outcome: Outcome | null; version: string }) {
  const { api } = useSession();
  const [result, refetch] = useQuery({ query: EventsQuery, variables: { id, outcome, after: null } });
  const [more, setMore] = useState<{ rows: EventRow[]; endCursor: string | null; hasNextPage: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => setMore(null), [outcome]);
  useEffect(() => {
    if (more === null) refetch({ requestPolicy: 'network-only' });
    // Only the counts' change re-reads; a reader who loaded more pages keeps them.
  }, [version]);
  const first = result.data?.redrive?.events;
  if (result.error) return <ErrorNote error={result.error} />;
  if (!first) return null;
  const rows = [...first.edges.map((e) => e.node), ...(more?.rows ?? [])];
  const page = more ?? { endCursor: first.pageInfo.endCursor ?? null, hasNextPage: first.pageInfo.hasNextPage };
  const loadMore = async () => {
    const out = await api.urql.query(EventsQuery, { id, outcome, after: page.endCursor }).toPromise();
    const events = out.data?.redrive?.events;
    if (out.error || !events) return setError(out.error ?? new Error('no data'));
    setMore({ rows: [...(more?.rows ?? []), ...events.edges.map((e) => e.node)], endCursor: events.pageInfo.endCursor ?? null, hasNextPage: events.pageInfo.hasNextPage });
  };
  const label = OUTCOMES.find((o) => o.outcome === outcome)?.label;
  return (
    <>
      <h3>{outcome ? `Its events: ${label}` : 'Its events'}</h3>
      {rows.length === 0 ? <p>None.</p> : (
        <table className="plain-table" data-testid="redrive-events">
          <thead><tr><th scope="col">Id</th><th scope="col">Status</th><th scope="col">Event type</th><th scope="col">Attempts</th><th scope="col">Error</th></tr></thead>
          <tbody>
            {rows.map((e) => (
              <tr key={e.id}>
                <td><Link to={`/failures/${e.id}`}>{e.id}</Link></td>
                <td><StatusBadge status={e.status} /></td>
                <td>{e.eventType}</td>
                <td>{e.attempts}</td>
                <td className="ellipsis" title={e.error.message}>{e.error.kind}: {e.error.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {page.hasNextPage ? <button type="button" onClick={() => void loadMore()}>Show 50 more</button> : null}
      <ErrorNote error={error} />
    </>
  );
}
