import { lazy, Suspense, useCallback, useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery } from 'urql';
import { useLiveStream } from '../api.ts';
import { paramsOf } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { ago, ErrorNote, Loading, mutationProblem, needs, StatusBadge, useCan, useSession } from '../ui.tsx';
import { HELD_LABEL, HeldBadge, HeldRelease, heldWhy } from '../held.tsx';
import { AttemptEntry } from './AttemptDetail.tsx';
import { DetailQuery, type Detail } from './eventDetailQuery.ts';
import { EditPayload } from './editPayload.ts';

const PayloadEditor = lazy(() => import('./PayloadEditor.tsx'));

const Blocked = graphql(`
  query EventBlocked($filter: DeadLetterFilter) { deadLetterStats(filter: $filter) { blockedKeys(limit: 1) { headId heldBack } } }
`);
const Changed = graphql(`
  subscription EventChanged($filter: DeadLetterFilter, $after: String) { deadLetterChanged(filter: $filter, after: $after) { cursor deleted } }
`);
const Attempted = graphql(`
  subscription EventAttempted($filter: DeadLetterFilter) { deliveryAttemptFinished(filter: $filter) { cursor } }
`);
const AddNote = graphql(`
  mutation AddNote($input: AddDeadLetterNoteInput!) { addDeadLetterNote(input: $input) { __typename ... on MutationError { code message } } }
`);
const RequeueOne = graphql(`
  mutation RequeueOne($input: RequeueDeadLettersInput!) { requeueDeadLetters(input: $input) { __typename ... on MutationError { code message } } }
`);
const ResolveOne = graphql(`
  mutation ResolveOne($input: ResolveDeadLettersInput!) { resolveDeadLetters(input: $input) { __typename ... on MutationError { code message } } }
`);
const DiscardOne = graphql(`
  mutation DiscardOne($input: DiscardDeadLettersInput!) { discardDeadLetters(input: $input) { __typename ... on MutationError { code message } } }
`);

export default function EventDetail() {
  const { id = '' } = useParams();
  const { api } = useSession();
  const [result, refetch] = useQuery({ query: DetailQuery, variables: { id } });
  const [deleted, setDeleted] = useState(false);
  const reload = useCallback(() => refetch({ requestPolicy: 'network-only' }), [refetch]);
  // The timeline is live: any change to this event, or an attempt at delivering it, re-reads it.
  const filter = { ids: [id] };
  useLiveStream(api, {
    query: Changed,
    variables: { filter },
    cursorOf: (d: ResultOf<typeof Changed>) => d.deadLetterChanged.cursor,
    onData: (d: ResultOf<typeof Changed>) => (d.deadLetterChanged.deleted ? setDeleted(true) : reload()),
  });
  useLiveStream(api, { query: Attempted, variables: { filter }, onData: reload });

  if (result.error) return <ErrorNote error={result.error} />;
  if (!result.data) return <Loading what={`dead letter ${id}`} />;
  const dl = result.data.deadLetter;
  if (!dl) return <p role="alert">There is no dead letter {id}{deleted ? ' any more: it was deleted.' : '.'} <Link to="/failures">Back to the list</Link></p>;
  return <DetailView dl={dl} deleted={deleted} reload={reload} />;
}

function DetailView({ dl, deleted, reload }: { dl: Detail; deleted: boolean; reload: () => void }) {
  const { api } = useSession();
  const canAct = useCan('OPERATOR');
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const [blocked] = useQuery({
    query: Blocked,
    variables: { filter: { eventTypes: [dl.eventType], orderingKey: dl.orderingKey } },
    pause: !dl.orderingKey,
  });
  const head = blocked.data?.deadLetterStats.blockedKeys[0];
  const latestAttempt = Math.max(0, ...dl.timeline.map((e) => e.attempt?.attemptNumber ?? 0));

  const act = async (kind: 'requeue' | 'resolve' | 'discard' | 'toSource') => {
    setError(null);
    const isRequeue = kind === 'requeue' || kind === 'toSource';
    const reason = isRequeue ? undefined : window.prompt(`Why ${kind} dead letter ${dl.id}?`);
    if (!isRequeue && !reason) return;
    const input = { ids: [dl.id], expectedVersions: [dl.version], reason: reason ?? undefined };
    const r =
      isRequeue
        ? await api.urql.mutation(RequeueOne, { input: { ...input, force: kind === 'toSource', destination: kind === 'toSource' ? 'SOURCE' : 'POLICY' } }).toPromise()
        : kind === 'resolve'
          ? await api.urql.mutation(ResolveOne, { input: { ...input, reason: reason! } }).toPromise()
          : await api.urql.mutation(DiscardOne, { input: { ...input, reason: reason! } }).toPromise();
    const problem = mutationProblem(r);
    if (problem) setError(problem);
    reload();
  };
  const addNote = async (event: FormEvent) => {
    event.preventDefault();
    const r = await api.urql.mutation(AddNote, { input: { id: dl.id, note } }).toPromise();
    const problem = mutationProblem(r);
    if (problem) return setError(problem);
    setNote('');
    reload();
  };
  const restore = async (payload: unknown, actionId: string) => {
    setError(null);
    if (payload === undefined) return setError(new Error(`edit ${actionId} did not record the payload before it`));
    const r = await api.urql
      .mutation(EditPayload, { input: { id: dl.id, payload, expectedVersion: dl.version, reason: `undo of edit ${actionId}` } })
      .toPromise();
    const problem = mutationProblem(r);
    if (problem) setError(problem);
    reload();
  };

  return (
    <article className="detail">
      <p><Link to="/failures">← Failures</Link></p>
      <h1>
        Dead letter {dl.id} <StatusBadge status={dl.status} />{dl.held ? <HeldBadge hold={dl.held} eventType={dl.eventType} /> : null}
      </h1>
      {deleted ? <p role="alert" className="error-note">This dead letter was deleted while you were looking at it.</p> : null}
      <dl className="facts">
        <dt>Event type</dt><dd><Link to={`/failures?${paramsOf({ type: dl.eventType })}`}>{dl.eventType}</Link></dd>
        <dt>Queue</dt><dd>{dl.queue}</dd>
        <dt>Source</dt><dd>{dl.source}</dd>
        <dt>Attempts</dt><dd>{dl.attempts}{dl.maxAttemptsOverride != null ? ` of ${dl.maxAttemptsOverride}` : ''}</dd>
        <dt>Created</dt><dd title={dl.createdAt}>{ago(dl.createdAt)}</dd>
        <dt>Next attempt</dt><dd>{dl.held ? <>held: {HELD_LABEL[dl.held.reason]}</> : dl.nextAttemptAt ? <span title={dl.nextAttemptAt}>{new Date(dl.nextAttemptAt).toLocaleString()}</span> : '—'}</dd>
        {dl.orderingKey ? (<><dt>Ordering key</dt><dd className="mono">{dl.orderingKey}</dd></>) : null}
        {dl.dedupeKey ? (<><dt>Dedupe key</dt><dd className="mono">{dl.dedupeKey}</dd></>) : null}
        {dl.origin ? (<><dt>Came from</dt><dd className="mono" data-testid="origin">{originText(dl.origin)}</dd></>) : null}
        {dl.resolvedBy ? (<><dt>Resolved by</dt><dd>{dl.resolvedBy}: {dl.resolutionReason}</dd></>) : null}
      </dl>
      {dl.held ? (
        <p className="warning" data-testid="held-note" role="status">
          <strong>Held.</strong> {heldWhy(dl.held, dl.eventType)} <HeldRelease hold={dl.held} />
        </p>
      ) : null}
      {head && (head.headId === dl.id || !dl.held) ? (
        <p className="warning" data-testid="blocked">
          Ordering key <code>{dl.orderingKey}</code> is blocked: {head.headId === dl.id ? 'this event is its head' : <>its head is <Link to={`/failures/${head.headId}`}>{head.headId}</Link></>}, holding {head.heldBack} later event{head.heldBack === 1 ? '' : 's'} back until it is resolved, discarded, requeued or succeeds.
        </p>
      ) : null}
      <div className="actions">
        {(['requeue', 'resolve', 'discard'] as const).map((k) => (
          <button key={k} onClick={() => void act(k)} disabled={!canAct} title={canAct ? undefined : needs('OPERATOR')}>{k[0]!.toUpperCase() + k.slice(1)}</button>
        ))}
        {dl.origin ? (
          <button onClick={() => void act('toSource')} disabled={!canAct} title={canAct ? 'Send it back where it came from (redirects applied)' : needs('OPERATOR')}>Redrive to source</button>
        ) : null}
        <button onClick={() => setEditing(true)} disabled={!canAct || editing} title={canAct ? undefined : needs('OPERATOR')}>Edit payload</button>
      </div>
      <ErrorNote error={error} />
      <section aria-labelledby="error-h">
        <h2 id="error-h">Error</h2>
        <p><span className="kind">{dl.error.kind}</span> {dl.error.message}</p>
        <p className="muted">Signature: <Link className="mono" to={`/failures?${paramsOf({ signature: dl.errorSignature })}`}>{dl.errorSignature}</Link>
          {dl.errorGroupId ? <> · <Link to={`/groups/${dl.errorGroupId}`}>its error group</Link></> : null}</p>
        {dl.error.stack ? <pre className="code" tabIndex={0} aria-label="Stack trace">{dl.error.stack}</pre> : null}
      </section>
      <section aria-labelledby="payload-h">
        <h2 id="payload-h">Payload</h2>
        {editing ? (
          <Suspense fallback={<Loading what="editor" />}>
            <PayloadEditor dl={dl} onDone={() => { setEditing(false); reload(); }} />
          </Suspense>
        ) : (
          <pre className="code" data-testid="payload" tabIndex={0} aria-label="Payload">{JSON.stringify(dl.payload, null, 2)}</pre>
        )}
        <h3>Headers</h3>
        <pre className="code" tabIndex={0} aria-label="Headers">{JSON.stringify(dl.headers, null, 2)}</pre>
      </section>
      <section aria-labelledby="timeline-h">
        <h2 id="timeline-h">Timeline</h2>
        <ol className="timeline" data-testid="timeline">
          {dl.timeline.map((entry, i) => (
            <li key={i}>
              <time dateTime={entry.at} title={entry.at}>{new Date(entry.at).toLocaleString()}</time>{' '}
              {entry.attempt ? (
                <AttemptEntry attempt={entry.attempt} isLatest={entry.attempt.attemptNumber === latestAttempt} retryAt={dl.status === 'PENDING' ? dl.nextAttemptAt : null} />
              ) : entry.action ? (
                <span>
                  <strong>{entry.action.action}</strong> by {entry.action.actor}
                  {entry.action.reason ? <span> — {entry.action.reason}</span> : null}
                  {entry.action.redriveId ? <> (<Link to={`/redrives/${entry.action.redriveId}`}>redrive {entry.action.redriveId}</Link>)</> : null}
                  {entry.action.action === 'PAYLOAD_EDITED' ? (
                    <button className="link" disabled={!canAct} onClick={() => void restore((entry.action!.before as { payload?: unknown } | null)?.payload, entry.action!.id)}>
                      Undo: restore the payload before this edit
                    </button>
                  ) : null}
                </span>
              ) : null}
            </li>
          ))}
        </ol>
        <form onSubmit={addNote} className="inline">
          <label>Note<input value={note} onChange={(e) => setNote(e.target.value)} maxLength={2000} required disabled={!canAct} /></label>
          <button type="submit" disabled={!canAct} title={canAct ? undefined : needs('OPERATOR')}>Add note</button>
        </form>
      </section>
    </article>
  );
}

/** An origin as one line: kind, bridge and every coordinate it has (docs/brokers.md, "Source coordinates"). */
function originText(origin: unknown): string {
  if (!origin || typeof origin !== 'object') return String(origin);
  const o = origin as Record<string, unknown>;
  const parts = [String(o.kind), o.bridge ? `bridge ${String(o.bridge)}` : null];
  for (const key of ['vhost', 'queue', 'exchange', 'stream', 'subject', 'sequence', 'id'] as const) {
    if (o[key] !== undefined && o[key] !== null && o[key] !== '') parts.push(`${key} ${String(o[key])}`);
  }
  if (Array.isArray(o.routingKeys) && o.routingKeys.length) parts.push(`routing keys ${o.routingKeys.join(', ')}`);
  return parts.filter(Boolean).join(' · ');
}
