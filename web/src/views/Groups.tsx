// Error groups: what is failing, grouped by event type, error kind and signature (or the producer's
// fingerprint), with status, counts, first and last seen and a 24-hour sparkline. The status
// filter and the order live in the URL. The list refreshes when a group changes (errorGroupChanged).
// The default order is the last 24 hours (TREND): the burst paging someone now comes first, where
// "last seen" put a single new event above it and the all-time counts an old, large group. Groups
// with nothing unresolved leave the default statuses on their own (they turn RESOLVED). Under each
// message, one line to read: its first event's first stack frame, or its error's first line.
import { lazy, Suspense, useEffect, useRef } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery, useSubscription } from 'urql';
import { graphql, type ResultOf, type VariablesOf } from '../graphql.ts';
import { ago, ErrorNote, fmt, Loading, messageText, splitSignature } from '../ui.tsx';

const Chart = lazy(() => import('./Chart.tsx'));

const GroupsQuery = graphql(`
  query ErrorGroups($filter: ErrorGroupFilter, $orderBy: ErrorGroupOrderField) {
    errorGroups(filter: $filter, orderBy: $orderBy, first: 100) {
      totalCount
      edges { node { id status eventType errorKind signature sampleHeadline count unresolvedCount firstSeen lastSeen regressedAt hourly(hours: 24) { start count } } }
    }
  }
`);

const GroupsChanged = graphql(`
  subscription ErrorGroupsChanged($filter: ErrorGroupFilter) { errorGroupChanged(filter: $filter) { kind group { id } } }
`);

type Status = NonNullable<NonNullable<VariablesOf<typeof GroupsQuery>['filter']>['statuses']>[number];
type Order = NonNullable<VariablesOf<typeof GroupsQuery>['orderBy']>;
export const GROUP_STATUSES: Status[] = ['OPEN', 'ACKNOWLEDGED', 'RESOLVED', 'IGNORED'];
const ORDERS: { value: Order; label: string }[] = [
  { value: 'TREND', label: 'Last 24 hours' },
  { value: 'UNRESOLVED', label: 'Unresolved' },
  { value: 'COUNT', label: 'Count' },
  { value: 'LAST_SEEN', label: 'Last seen' },
];
const DEFAULT_ORDER: Order = 'TREND';
type Group = ResultOf<typeof GroupsQuery>['errorGroups']['edges'][number]['node'];

export default function Groups() {
  const [params, setParams] = useSearchParams();
  const statuses = (params.get('status') ?? 'OPEN,ACKNOWLEDGED').split(',').filter((s): s is Status => (GROUP_STATUSES as string[]).includes(s));
  const orderBy = ORDERS.find((o) => o.value === params.get('order'))?.value ?? DEFAULT_ORDER;
  const filter = statuses.length ? { statuses } : {};
  const [result, refetch] = useQuery({ query: GroupsQuery, variables: { filter, orderBy } });
  // A change refetches the page, at most once a second.
  const [changed] = useSubscription({ query: GroupsChanged, variables: { filter: {} } });
  const last = useRef(0);
  useEffect(() => {
    if (!changed.data) return;
    const wait = Math.max(0, last.current + 1000 - Date.now());
    const timer = setTimeout(() => {
      last.current = Date.now();
      refetch({ requestPolicy: 'network-only' });
    }, wait);
    return () => clearTimeout(timer);
  }, [changed.data, refetch]);

  const set = (name: string, value: string) => {
    const next = new URLSearchParams(params);
    next.set(name, value);
    setParams(next);
  };
  const toggle = (s: Status) => set('status', (statuses.includes(s) ? statuses.filter((x) => x !== s) : [...statuses, s]).join(','));
  const groups = result.data?.errorGroups;
  return (
    <div className="groups">
      <h1>Error groups</h1>
      <div className="toolbar">
        <fieldset className="inline">
          <legend>Status</legend>
          {GROUP_STATUSES.map((s) => (
            <label key={s} className="check"><input type="checkbox" checked={statuses.includes(s)} onChange={() => toggle(s)} /> {s.toLowerCase()}</label>
          ))}
        </fieldset>
        <label>Order by{' '}
          <select value={orderBy} onChange={(e) => set('order', e.target.value)}>
            {ORDERS.map((o) => <option key={o.value} value={o.value}>{o.label}</option>)}
          </select>
        </label>
        <span className="spacer" />
        <span data-testid="group-count">{groups ? `${fmt(groups.totalCount)} groups` : ''}</span>
      </div>
      <ErrorNote error={result.error} />
      {!groups ? <Loading what="error groups" /> : groups.edges.length === 0 ? <p className="muted">No error groups with these statuses.</p> : (
        <table className="plain-table groups-table">
          <thead>
            <tr><th scope="col">Status</th><th scope="col">Error</th><th scope="col">Event type</th><th scope="col">Count</th><th scope="col">Unresolved</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Last 24 hours</th></tr>
          </thead>
          <tbody>
            {groups.edges.map(({ node: g }) => <GroupRow key={g.id} group={g} />)}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function GroupStatus({ status, regressedAt }: { status: string; regressedAt?: string | null }) {
  return (
    <>
      <span className={`badge group-${status.toLowerCase()}`}>{status}</span>
      {regressedAt && status === 'OPEN' ? <span className="badge group-regressed" title={`regressed ${regressedAt}`}>REGRESSED</span> : null}
    </>
  );
}

function GroupRow({ group: g }: { group: Group }) {
  const { message, frames } = splitSignature(g.signature);
  const text = messageText(message);
  // Under the message: the first frame of a stored stack (as stored, with its line), else the
  // first line of the error as it was (the message above is the signature, with <n> for numbers).
  const headline = g.sampleHeadline ?? frames[0] ?? null;
  return (
    <tr data-testid="group-row">
      <td><GroupStatus status={g.status} regressedAt={g.regressedAt} /></td>
      <td className="ellipsis" title={g.signature}>
        <span className="kind">{g.errorKind}</span>{' '}
        {/* An empty message still needs a name that tells this group's link from the others'. */}
        <Link to={`/groups/${g.id}`} aria-label={message.trim() === '' ? `${text} ${g.errorKind} ${g.eventType}` : undefined}>{text}</Link>
        {headline ? <><br /><span className="frame" data-testid="group-headline">{headline}</span></> : null}
      </td>
      <td>{g.eventType}</td>
      <td className="num">{fmt(g.count)}</td>
      <td className="num">{fmt(g.unresolvedCount)}</td>
      <td title={g.firstSeen}>{ago(g.firstSeen)}</td>
      <td title={g.lastSeen}>{ago(g.lastSeen)}</td>
      <td>
        <Suspense fallback={<span className="spark" />}>
          <Chart spark label={`Hourly count of ${text}`} times={g.hourly.map((h) => h.start)} counts={g.hourly.map((h) => h.count)} width={120} height={28} />
        </Suspense>
      </td>
    </tr>
  );
}
