// Broker bridges (LAZARUS_BRIDGES): what each took in, its lag, rate and last error, with pause and
// resume for admins. Descriptions name host and place only; settings never reach the console.
// Below, the redirects of redrives to source, with a warning on a destination no event came from.
import { useState, type FormEvent } from 'react';
import { useQuery } from 'urql';
import { graphql, type ResultOf } from '../graphql.ts';
import { ago, ErrorNote, Loading, mutationProblem, useCan, useSession } from '../ui.tsx';

const BridgesQuery = graphql(`
  query Bridges {
    bridges { name kind description state paused pausedBy pausedAt received recorded duplicates poison refused lag ratePerSecond lastError lastErrorAt }
  }
`);
const Pause = graphql(`mutation PauseBridge($name: String!) { pauseBridge(name: $name) { name paused } }`);
const Resume = graphql(`mutation ResumeBridge($name: String!) { resumeBridge(name: $name) { name paused } }`);

const RedirectsQuery = graphql(`
  query SourceRedirects { sourceRedirects { id kind fromPlace toPlace toBridge isSeenDestination updatedBy updatedAt } }
`);
const UpsertRedirect = graphql(`
  mutation UpsertSourceRedirect($input: SourceRedirectInput!) {
    upsertSourceRedirect(input: $input) { __typename ... on SourceRedirect { id } ... on MutationError { code message } }
  }
`);
const DeleteRedirect = graphql(`mutation DeleteSourceRedirect($id: ID!) { deleteSourceRedirect(id: $id) }`);

type Bridge = ResultOf<typeof BridgesQuery>['bridges'][number];

export default function Bridges() {
  const isAdmin = useCan('ADMIN');
  const { api } = useSession();
  const [result, refetch] = useQuery({ query: BridgesQuery, requestPolicy: 'network-only' });
  const [error, setError] = useState<unknown>(null);
  if (result.error) return <ErrorNote error={result.error} />;
  if (!result.data) return <Loading what="bridges" />;
  const toggle = async (b: Bridge) => {
    setError(null);
    const r = await api.urql.mutation(b.paused ? Resume : Pause, { name: b.name }).toPromise();
    if (r.error) setError(r.error);
    refetch({ requestPolicy: 'network-only' });
  };
  const bridges = result.data.bridges;
  return (
    <div>
      <h1>Bridges</h1>
      <ErrorNote error={error} />
      {bridges.length === 0 ? (
        <p role="status">No bridges are declared. Declare them in <code>LAZARUS_BRIDGES</code> (see the README) to take a broker’s dead letters in.</p>
      ) : (
        <table className="plain-table">
          <thead>
            <tr>
              <th scope="col">Bridge</th><th scope="col">Source</th><th scope="col">State</th><th scope="col">Recorded</th>
              <th scope="col">Duplicates</th><th scope="col">Poison</th><th scope="col">Lag</th><th scope="col">Rate</th>
              <th scope="col">Last error</th><th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {bridges.map((b) => (
              <tr key={b.name}>
                <td className="mono">{b.name}</td>
                <td className="ellipsis mono">{b.description}</td>
                <td>{b.state.toLowerCase()}{b.paused && b.pausedBy ? ` by ${b.pausedBy}` : ''}</td>
                <td>{b.recorded} of {b.received}</td>
                <td>{b.duplicates}</td>
                <td>{b.poison}{b.refused ? ` (${b.refused} refused)` : ''}</td>
                <td>{b.lag ?? '—'}</td>
                <td>{b.ratePerSecond.toFixed(1)}/s</td>
                <td className="ellipsis" title={b.lastError ?? undefined}>{b.lastError ? `${b.lastError} (${ago(b.lastErrorAt!)})` : <span className="muted">none</span>}</td>
                <td>{isAdmin ? <button onClick={() => void toggle(b)}>{b.paused ? 'Resume' : 'Pause'} {b.name}</button> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p className="muted">Counts are this instance’s since it started; a pause holds on every instance and across restarts.</p>
      <Redirects bridges={bridges} />
    </div>
  );
}

function Redirects({ bridges }: { bridges: Bridge[] }) {
  const isAdmin = useCan('ADMIN');
  const { api } = useSession();
  const [result, refetch] = useQuery({ query: RedirectsQuery, requestPolicy: 'network-only' });
  const [error, setError] = useState<unknown>(null);
  const [kind, setKind] = useState('amqp');
  const [fromPlace, setFromPlace] = useState('');
  const [toPlace, setToPlace] = useState('');
  const [toBridge, setToBridge] = useState('');
  const reload = () => refetch({ requestPolicy: 'network-only' });
  const add = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    const r = await api.urql.mutation(UpsertRedirect, { input: { kind, fromPlace, toPlace, toBridge: toBridge || undefined } }).toPromise();
    const problem = mutationProblem(r);
    if (problem) return setError(problem);
    setFromPlace('');
    setToPlace('');
    reload();
  };
  const remove = async (id: string) => {
    setError(null);
    const r = await api.urql.mutation(DeleteRedirect, { id }).toPromise();
    if (r.error) setError(r.error);
    reload();
  };
  const rules = result.data?.sourceRedirects;
  return (
    <section aria-labelledby="redirects-title">
      <h2 id="redirects-title">Redirects of redrives to source</h2>
      <p className="muted">What would be redriven to the source on the left goes to the destination on the right instead: for a queue that was renamed or an endpoint that was retired.</p>
      <ErrorNote error={result.error ?? error} />
      {!rules ? <Loading what="redirects" /> : rules.length === 0 ? (
        <p role="status">No redirects: a redrive to source goes where each event came from.</p>
      ) : (
        <table className="plain-table" data-testid="redirects">
          <thead>
            <tr><th scope="col">Kind</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Through bridge</th><th scope="col">Changed</th><th scope="col"><span className="sr-only">Actions</span></th></tr>
          </thead>
          <tbody>
            {rules.map((r) => (
              <tr key={r.id}>
                <td>{r.kind}</td>
                <td className="mono">{r.fromPlace}</td>
                <td>
                  <span className="mono">{r.toPlace}</span>
                  {r.isSeenDestination ? null : <p className="warning" data-testid="unseen-destination">No event came from {r.toPlace}: Lazarus has never seen it. Check for a typo.</p>}
                </td>
                <td className="mono">{r.toBridge ?? <span className="muted">the event’s own</span>}</td>
                <td><span title={r.updatedAt}>{ago(r.updatedAt)}</span> by {r.updatedBy}</td>
                <td>{isAdmin ? <button onClick={() => void remove(r.id)}>Delete redirect from {r.fromPlace}</button> : null}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {isAdmin ? (
        <form onSubmit={(e) => void add(e)} aria-label="Add a redirect" className="inline-form">
          <label>Kind
            <select value={kind} onChange={(e) => setKind(e.target.value)}>
              <option value="amqp">amqp (a RabbitMQ queue)</option>
              <option value="nats">nats (a subject)</option>
              <option value="redis">redis (a stream)</option>
            </select>
          </label>
          <label>From <input value={fromPlace} onChange={(e) => setFromPlace(e.target.value)} required maxLength={1024} /></label>
          <label>To <input value={toPlace} onChange={(e) => setToPlace(e.target.value)} required maxLength={1024} /></label>
          <label>Through bridge
            <select value={toBridge} onChange={(e) => setToBridge(e.target.value)}>
              <option value="">the event’s own</option>
              {bridges.map((b) => <option key={b.name} value={b.name}>{b.name} ({b.kind})</option>)}
            </select>
          </label>
          <button type="submit">Add redirect</button>
        </form>
      ) : null}
    </section>
  );
}
