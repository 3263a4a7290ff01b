import { useState } from 'react';
import { useQuery } from 'urql';
import { graphql } from '../graphql.ts';
import { ago, ErrorNote, Loading, useCan, useSession } from '../ui.tsx';
import { PolicyForm } from './PolicyForm.tsx';
import { PoliciesQuery, type Policy, type TargetHealth } from './policiesQuery.ts';

const Pause = graphql(`mutation PauseType($eventType: String!) { pauseEventType(eventType: $eventType) { eventType paused } }`);
const Resume = graphql(`mutation ResumeType($eventType: String!) { resumeEventType(eventType: $eventType) { eventType paused } }`);


export default function Policies() {
  const isAdmin = useCan('ADMIN');
  const { api } = useSession();
  const [result, refetch] = useQuery({ query: PoliciesQuery, pause: !isAdmin });
  const [editing, setEditing] = useState<Policy | 'new' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reload = () => refetch({ requestPolicy: 'network-only' });
  if (!isAdmin) return <div><h1>Retry policies</h1><p role="status">Retry policies are managed by admins: your key has the {useSession().role.toLowerCase()} role.</p></div>;
  if (result.error) return <ErrorNote error={result.error} />;
  if (!result.data) return <Loading what="retry policies" />;
  const health = result.data.retryTargetHealth;

  const togglePause = async (p: Policy) => {
    setError(null);
    const r = await api.urql.mutation(p.paused ? Resume : Pause, { eventType: p.eventType }).toPromise();
    if (r.error) setError(r.error);
    reload();
  };
  return (
    <div>
      <h1>Retry policies</h1>
      <ErrorNote error={error} />
      <table className="plain-table">
        <thead>
          <tr>
            <th scope="col">Event type</th><th scope="col">Attempts</th><th scope="col">Backoff</th><th scope="col">Timeout</th>
            <th scope="col">Target</th><th scope="col">Flags</th><th scope="col">Updated</th><th scope="col"><span className="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          {result.data.retryPolicies.map((p) => (
            <tr key={p.eventType}>
              <td className="mono">{p.eventType}</td>
              <td>{p.maxAttempts}</td>
              <td>{p.backoff.toLowerCase()} {p.baseDelayMs}–{p.maxDelayMs} ms</td>
              <td>{p.timeoutMs} ms</td>
              <td>
                <span className="ellipsis mono">{p.target ? (p.target.description ?? p.target.kind) : <span className="muted">in-process / held</span>}</span>
                <TargetStatus target={p.target} health={health} />
              </td>
              <td>{[p.paused && 'paused', p.ordered && 'ordered', p.concurrency != null && `≤${p.concurrency} in flight`].filter(Boolean).join(', ')}</td>
              <td title={p.updatedAt}>{ago(p.updatedAt)}{p.updatedBy ? ` by ${p.updatedBy}` : ''}</td>
              <td>
                <button onClick={() => setEditing(p)}>Edit {p.eventType}</button>{' '}
                <button onClick={() => void togglePause(p)}>{p.paused ? 'Resume' : 'Pause'} {p.eventType}</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p><button onClick={() => setEditing('new')}>New policy for an event type</button></p>
      {editing ? (
        <PolicyForm policy={editing === 'new' ? null : editing} defaults={result.data.retryPolicies.find((p) => p.eventType === '*')!}
          kinds={result.data.retryTargetKinds} onDone={() => { setEditing(null); reload(); }} />
      ) : null}
    </div>
  );
}

const STATE_CLASS = { CONNECTED: 'status-succeeded', CONNECTING: 'status-pending', DISCONNECTED: 'status-failed' } as const;

/** The connection state of a broker target (its description ends with the host the health names). */
function TargetStatus({ target, health }: { target: Policy['target']; health: readonly TargetHealth[] }) {
  const h = target && health.find((row) => row.kind === target.kind && target.description?.endsWith(` on ${row.target}`));
  if (!h) return null;
  return (
    <div className="hint" data-testid="target-health">
      <span className={`badge ${STATE_CLASS[h.state]}`}>{h.state.toLowerCase()}</span>
      {h.lastError ? <span title={h.lastErrorAt ?? undefined}> {h.lastError}{h.lastErrorAt ? ` (${ago(h.lastErrorAt)})` : ''}</span> : null}
    </div>
  );
}
