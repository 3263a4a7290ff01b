// The console's tail -f: every change and delivery outcome matching a filter, newest on top.
import { useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useLiveStream } from '../api.ts';
import { filterFromParams } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { ErrorNote, StatusBadge, useSession } from '../ui.tsx';

const Changes = graphql(`
  subscription TailChanges($filter: DeadLetterFilter, $after: String) {
    deadLetterChanged(filter: $filter, after: $after) {
      cursor isNew deleted deadLetterId
      deadLetter { status eventType queue attempts error { kind message } }
      removed { status eventType queue }
    }
  }
`);
const Attempts = graphql(`
  subscription TailAttempts($filter: DeadLetterFilter) {
    deliveryAttemptFinished(filter: $filter) { cursor deadLetter { eventType } attempt { attemptNumber outcome statusCode durationMs errorMessage finishedAt } }
  }
`);

interface Line { key: string; at: string; id: string; kind: string; status?: string; text: string }
const KEEP = 500;

export default function Tail() {
  const { api } = useSession();
  const [params, setParams] = useSearchParams();
  const filter = useMemo(() => filterFromParams(params), [params]);
  const [lines, setLines] = useState<Line[]>([]);
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const push = (line: Line) => setLines((old) => [line, ...old].slice(0, KEEP));

  useLiveStream(api, {
    query: Changes,
    variables: { filter },
    enabled: !paused,
    cursorOf: (d: ResultOf<typeof Changes>) => d.deadLetterChanged.cursor,
    onData: (d: ResultOf<typeof Changes>) => {
      const c = d.deadLetterChanged;
      const row = c.deadLetter ?? c.removed;
      push({
        key: `c${c.cursor}`,
        at: new Date().toISOString(),
        id: c.deadLetterId,
        kind: c.deleted ? 'deleted' : c.isNew ? 'new' : 'changed',
        status: row?.status,
        text: `${row?.eventType ?? ''} on ${row?.queue ?? ''}${c.deadLetter ? ` — ${c.deadLetter.error.kind}: ${c.deadLetter.error.message}` : ''}`,
      });
    },
    onError: setError,
  });
  useLiveStream(api, {
    query: Attempts,
    variables: { filter },
    enabled: !paused,
    onData: (d: ResultOf<typeof Attempts>) => {
      const a = d.deliveryAttemptFinished;
      push({
        key: `a${a.cursor}`,
        at: a.attempt.finishedAt,
        id: a.cursor,
        kind: 'attempt',
        status: a.attempt.outcome,
        text: `${a.deadLetter?.eventType ?? ''} attempt ${a.attempt.attemptNumber}${a.attempt.statusCode ? ` HTTP ${a.attempt.statusCode}` : ''} in ${a.attempt.durationMs} ms${a.attempt.errorMessage ? ` — ${a.attempt.errorMessage}` : ''}`,
      });
    },
    onError: setError,
  });

  return (
    <div>
      <h1>Live tail</h1>
      <form className="inline" onSubmit={(e) => { e.preventDefault(); const f = new FormData(e.currentTarget); const p = new URLSearchParams(); for (const k of ['type', 'status', 'q']) { const v = String(f.get(k) ?? ''); if (v) p.set(k, v); } setParams(p); }}>
        <label>Event types<input name="type" defaultValue={params.get('type') ?? ''} /></label>
        <label>Statuses<input name="status" defaultValue={params.get('status') ?? ''} placeholder="EXHAUSTED,PENDING" /></label>
        <label>Error text<input name="q" defaultValue={params.get('q') ?? ''} /></label>
        <button type="submit">Filter</button>
        <button type="button" onClick={() => setPaused(!paused)}>{paused ? 'Resume' : 'Pause'}</button>
        <button type="button" onClick={() => setLines([])}>Clear</button>
      </form>
      {error ? <ErrorNote error={new Error(error)} /> : null}
      <ol className="tail" data-testid="tail" aria-live="polite">
        {lines.map((l) => (
          <li key={l.key}>
            <time dateTime={l.at}>{new Date(l.at).toLocaleTimeString()}</time> <span className={`tag tag-${l.kind}`}>{l.kind}</span>{' '}
            {l.kind === 'attempt' ? null : <Link to={`/failures/${l.id}`}>{l.id}</Link>} {l.status ? <StatusBadge status={l.status} /> : null} {l.text}
          </li>
        ))}
      </ol>
      {lines.length === 0 ? <p className="muted">Waiting for changes{paused ? ' (paused)' : ''}…</p> : null}
    </div>
  );
}
