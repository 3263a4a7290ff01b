import { useState, type FormEvent } from 'react';
import { useQuery } from 'urql';
import { describeError } from '../api.ts';
import { ERROR_KINDS } from '../filters.ts';
import { graphql, type ResultOf, type VariablesOf } from '../graphql.ts';
import { ago, ErrorNote, Loading, useCan, useSession } from '../ui.tsx';

const PoliciesQuery = graphql(`
  query Policies {
    retryPolicies {
      eventType maxAttempts backoff baseDelayMs maxDelayMs timeoutMs paused ordered concurrency targetUrl
      allowPrivateTarget hasSigningSecret permanentStatusCodes permanentErrorKinds updatedAt updatedBy
    }
  }
`);
const Upsert = graphql(`mutation UpsertPolicy($input: UpsertRetryPolicyInput!) { upsertRetryPolicy(input: $input) { eventType } }`);
const Pause = graphql(`mutation PauseType($eventType: String!) { pauseEventType(eventType: $eventType) { eventType paused } }`);
const Resume = graphql(`mutation ResumeType($eventType: String!) { resumeEventType(eventType: $eventType) { eventType paused } }`);

type Policy = ResultOf<typeof PoliciesQuery>['retryPolicies'][number];
type Input = VariablesOf<typeof Upsert>['input'];

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
              <td className="ellipsis mono">{p.targetUrl ?? <span className="muted">in-process / held</span>}</td>
              <td>{[p.paused && 'paused', p.ordered && 'ordered', p.hasSigningSecret && 'signed', p.concurrency != null && `≤${p.concurrency} in flight`].filter(Boolean).join(', ')}</td>
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
      {editing ? <PolicyForm policy={editing === 'new' ? null : editing} onDone={() => { setEditing(null); reload(); }} /> : null}
    </div>
  );
}

function PolicyForm({ policy, onDone }: { policy: Policy | null; onDone: () => void }) {
  const { api } = useSession();
  const [values, setValues] = useState<Record<string, string>>(() => ({
    eventType: policy?.eventType ?? '',
    maxAttempts: String(policy?.maxAttempts ?? ''),
    backoff: policy?.backoff ?? 'EXPONENTIAL',
    baseDelayMs: String(policy?.baseDelayMs ?? ''),
    maxDelayMs: String(policy?.maxDelayMs ?? ''),
    timeoutMs: String(policy?.timeoutMs ?? ''),
    concurrency: policy?.concurrency == null ? '' : String(policy.concurrency),
    targetUrl: policy?.targetUrl ?? '',
    permanentStatusCodes: policy?.permanentStatusCodes.join(', ') ?? '',
    permanentErrorKinds: policy?.permanentErrorKinds.join(', ') ?? '',
    signingSecret: '',
  }));
  const [flags, setFlags] = useState({ ordered: policy?.ordered ?? false, allowPrivateTarget: policy?.allowPrivateTarget ?? false });
  const [problem, setProblem] = useState<{ field?: string; message: string; code: string } | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    const int = (k: string) => (values[k] === '' ? undefined : Number(values[k]));
    const input: Input = {
      eventType: values.eventType!,
      maxAttempts: int('maxAttempts'),
      backoff: values.backoff as Input['backoff'],
      baseDelayMs: int('baseDelayMs'),
      maxDelayMs: int('maxDelayMs'),
      timeoutMs: int('timeoutMs'),
      concurrency: values.concurrency === '' ? null : Number(values.concurrency),
      targetUrl: values.targetUrl === '' ? null : values.targetUrl,
      permanentStatusCodes: values.permanentStatusCodes!.split(',').map((s) => s.trim()).filter(Boolean).map(Number),
      permanentErrorKinds: values.permanentErrorKinds!.split(',').map((s) => s.trim()).filter(Boolean) as Input['permanentErrorKinds'],
      signingSecret: values.signingSecret === '' ? undefined : values.signingSecret,
      ...flags,
    };
    const r = await api.urql.mutation(Upsert, { input }).toPromise();
    if (r.error) return setProblem(describeError(r.error));
    onDone();
  };
  const field = (name: string, label: string, type = 'text', hint?: string) => (
    <label>
      {label}
      <input name={name} type={type} value={values[name] ?? ''} onChange={(e) => setValues({ ...values, [name]: e.target.value })}
        aria-invalid={problem?.field === name || undefined} aria-describedby={problem?.field === name ? `${name}-error` : undefined}
        readOnly={name === 'eventType' && policy !== null} placeholder={hint} />
      {problem?.field === name ? <span id={`${name}-error`} role="alert" className="field-error">{problem.message}</span> : null}
    </label>
  );
  return (
    <form className="policy-form" onSubmit={submit} aria-label={policy ? `Edit the ${policy.eventType} policy` : 'New policy'}>
      <h2>{policy ? `Edit ${policy.eventType}` : 'New policy'}</h2>
      {field('eventType', 'Event type')}
      {field('maxAttempts', 'Max attempts', 'number')}
      <label>
        Backoff
        <select value={values.backoff} onChange={(e) => setValues({ ...values, backoff: e.target.value })}>
          <option>EXPONENTIAL</option><option>LINEAR</option><option>FIXED</option>
        </select>
      </label>
      {field('baseDelayMs', 'Base delay (ms)', 'number')}
      {field('maxDelayMs', 'Max delay (ms)', 'number')}
      {field('timeoutMs', 'Timeout (ms)', 'number')}
      {field('concurrency', 'Concurrency (empty: unlimited)', 'number')}
      {field('targetUrl', 'Webhook URL (empty: in-process handler)', 'text', 'https://…')}
      {field('signingSecret', policy?.hasSigningSecret ? 'Signing secret (set; type to replace)' : 'Signing secret', 'password')}
      {field('permanentStatusCodes', 'Permanent HTTP status codes', 'text', '400, 404, 422')}
      {field('permanentErrorKinds', 'Permanent error kinds', 'text', ERROR_KINDS.join(', '))}
      <label className="check"><input type="checkbox" checked={flags.ordered} onChange={(e) => setFlags({ ...flags, ordered: e.target.checked })} /> ordered per ordering key</label>
      <label className="check"><input type="checkbox" checked={flags.allowPrivateTarget} onChange={(e) => setFlags({ ...flags, allowPrivateTarget: e.target.checked })} /> allow a private-network target</label>
      {problem && !problem.field ? <p role="alert" className="error-note"><strong>{problem.code}</strong> {problem.message}</p> : null}
      {problem?.field && !(problem.field in values) ? <p role="alert" className="error-note"><strong>{problem.code}</strong> {problem.field}: {problem.message}</p> : null}
      <div className="actions">
        <button type="submit">Save policy</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

