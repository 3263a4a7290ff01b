// Bulk actions on every dead letter matching the filter: a dry run first (how many, a sample, what is
// not eligible and why), then a confirmation. A large requeue becomes a throttled redrive, followed live.
// "Transform payloads" patches every matching payload (TransformPayloads.tsx, loaded when chosen).
// On ticked rows (`selected`), each acts on those of them still matching the filter, and the dry run
// lists every ticked row with what the action would do to it, or why not (selectedRows.ts).
import { lazy, Suspense, useEffect, useMemo, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import type { DeadLetterFilter } from '../filters.ts';
import { graphql } from '../graphql.ts';
import { ErrorNote, fmt, Loading, mutationProblem, needs, StatusBadge, useCan, useSession, type Role } from '../ui.tsx';
import { readSelectedRows, selectionFilter, whyLeftOut } from './selectedRows.ts';
import { SelectedLeftOut, SelectedPreview, type SelectedOutcome } from './SelectedPreview.tsx';

const TransformPayloads = lazy(() => import('./TransformPayloads.tsx'));

const Requeue = graphql(`
  mutation BulkRequeue($input: RequeueDeadLettersInput!) {
    requeueDeadLetters(input: $input) {
      __typename
      ... on RequeueResult { count dryRun ids withoutSource redrive { id } }
      ... on MutationError { code message }
    }
  }
`);
const Resolve = graphql(`
  mutation BulkResolve($input: ResolveDeadLettersInput!) {
    resolveDeadLetters(input: $input) { __typename ... on BulkChange { count dryRun ids } ... on MutationError { code message } }
  }
`);
const Discard = graphql(`
  mutation BulkDiscard($input: DiscardDeadLettersInput!) {
    discardDeadLetters(input: $input) { __typename ... on BulkChange { count dryRun ids } ... on MutationError { code message } }
  }
`);
const Delete = graphql(`
  mutation BulkDelete($input: DeleteDeadLettersInput!) {
    deleteDeadLetters(input: $input) { __typename ... on BulkChange { count dryRun ids } ... on MutationError { code message } }
  }
`);
const Breakdown = graphql(`
  query BulkBreakdown($filter: DeadLetterFilter, $sample: DeadLetterFilter) {
    deadLetterStats(filter: $filter) { byStatus { key count } }
    deadLetters(filter: $sample, first: 5) { edges { node { id status eventType error { kind message } } } }
  }
`);

type Action = 'requeue' | 'resolve' | 'discard' | 'delete';
const ACTIONS: Record<Action, { label: string; role: Role; eligible: (status: string, force: boolean) => string | null; reasonRequired: boolean }> = {
  requeue: {
    label: 'Requeue',
    role: 'OPERATOR',
    eligible: (s, force) =>
      s === 'PROCESSING' ? 'being delivered now' : ['PENDING', 'EXHAUSTED'].includes(s) || force ? null : 'already finished (tick "also requeue finished events")',
    reasonRequired: false,
  },
  resolve: { label: 'Resolve', role: 'OPERATOR', eligible: (s) => (['PENDING', 'EXHAUSTED'].includes(s) ? null : 'only pending or exhausted events can be resolved'), reasonRequired: true },
  discard: { label: 'Discard', role: 'OPERATOR', eligible: (s) => (['PENDING', 'EXHAUSTED'].includes(s) ? null : 'only pending or exhausted events can be discarded'), reasonRequired: true },
  delete: { label: 'Delete for good', role: 'ADMIN', eligible: (s) => (s === 'PROCESSING' ? 'being delivered now' : null), reasonRequired: false },
};

interface Preview {
  count: number;
  /** For a requeue to source: how many have no source to go back to (the requeue would be refused). */
  withoutSource: number;
  sample: { id: string; status: string; eventType: string; error: { kind: string; message: string } }[];
  /** Status null: the id names no dead letter any more. */
  ineligible: { status: string | null; count: number; why: string }[];
  /** With a selection: every ticked row, and what the action would do to it. */
  selected: SelectedOutcome[] | null;
}

interface Props {
  filter: DeadLetterFilter;
  matching: { count: number; exact: boolean } | null;
  /** Ticked rows: act on these (those still matching the filter), not on all matching. */
  selected?: readonly string[];
  onClose: (changed: boolean) => void;
}

export function BulkActions({ filter: listFilter, matching, selected, onClose }: Props) {
  const filter = useMemo(() => (selected ? selectionFilter(listFilter, selected) : listFilter), [listFilter, selected]);
  const { api } = useSession();
  const navigate = useNavigate();
  const [action, setAction] = useState<Action | 'transform'>('requeue');
  const [reason, setReason] = useState('');
  const [force, setForce] = useState(false);
  const [resetAttempts, setResetAttempts] = useState(false);
  const [destination, setDestination] = useState<'POLICY' | 'SOURCE'>('POLICY');
  const [rate, setRate] = useState('');
  const [startRate, setStartRate] = useState('');
  const [rampSeconds, setRampSeconds] = useState('');
  const [guard, setGuard] = useState('');
  const [windowSize, setWindowSize] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const allowed = useCan(action === 'transform' ? 'OPERATOR' : ACTIONS[action].role);

  useEffect(() => setPreview(null), [action, force, destination]);

  const run = async (action: Action, dryRun: boolean) => {
    const base = { filter, dryRun, reason: reason.trim() || undefined };
    switch (action) {
      case 'requeue': {
        const num = (v: string) => (v.trim() === '' ? undefined : Number(v));
        // The ramp and the guard go as redriveLimits; "Rate" stays the constant (or maximum) rate.
        const limits = { startRatePerSecond: num(startRate), rampSeconds: num(rampSeconds), pauseWhenFailureRateAbove: num(guard), windowSize: num(windowSize) };
        const hasLimits = Object.values(limits).some((v) => v !== undefined);
        const input = { ...base, force, resetAttempts, destination, ratePerSecond: num(rate), redriveLimits: hasLimits ? limits : undefined };
        const r = await api.urql.mutation(Requeue, { input }).toPromise();
        const data = r.data?.requeueDeadLetters;
        return {
          error: mutationProblem(r), count: data && 'count' in data ? data.count : 0, ids: data && 'ids' in data ? data.ids : [],
          withoutSource: data && 'withoutSource' in data ? data.withoutSource ?? 0 : 0, redrive: data && 'redrive' in data ? data.redrive?.id : undefined,
        };
      }
      case 'resolve':
      case 'discard':
      case 'delete': {
        const doc = action === 'resolve' ? Resolve : action === 'discard' ? Discard : Delete;
        const r = await api.urql.mutation(doc as typeof Resolve, { input: { ...base, reason: base.reason ?? '' } }).toPromise();
        const data = r.data ? (Object.values(r.data)[0] as { count?: number; ids?: string[] }) : null;
        return { error: mutationProblem(r), count: data?.count ?? 0, ids: data?.ids ?? [], withoutSource: 0, redrive: undefined };
      }
    }
  };

  const dryRun = async () => {
    if (action === 'transform') return;
    setBusy(true);
    setError(null);
    try {
      const r = await run(action, true);
      if (r.error) return setError(r.error);
      if (selected) return setPreview(await previewSelected(action, r));
      const b = await api.urql.query(Breakdown, { filter, sample: { ids: r.ids.slice(0, 5) } }).toPromise();
      if (b.error || !b.data) return setError(b.error);
      const ineligible = b.data.deadLetterStats.byStatus
        .map((s) => ({ status: s.key, count: s.count, why: ACTIONS[action].eligible(s.key, force) }))
        .filter((s): s is { status: string; count: number; why: string } => s.why !== null);
      setPreview({ count: r.count, withoutSource: r.withoutSource, sample: r.ids.length ? b.data.deadLetters.edges.map((e) => e.node) : [], ineligible, selected: null });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const previewSelected = async (action: Action, r: { count: number; withoutSource: number }): Promise<Preview> => {
    const rows = await readSelectedRows(api, listFilter, selected ?? []);
    const outcomes = rows.map((row) => ({ ...row, why: whyLeftOut(row) ?? ACTIONS[action].eligible(row.now!.status, force) }));
    const groups = new Map<string, Preview['ineligible'][number]>();
    for (const o of outcomes) {
      if (o.why === null) continue;
      const status = o.now?.status ?? null;
      const key = `${status}|${o.why}`;
      const group = groups.get(key) ?? { status, count: 0, why: o.why };
      group.count += 1;
      groups.set(key, group);
    }
    return { count: r.count, withoutSource: r.withoutSource, sample: [], ineligible: [...groups.values()], selected: outcomes };
  };

  const confirm = async (event: FormEvent) => {
    event.preventDefault();
    if (action === 'transform') return;
    setBusy(true);
    setError(null);
    try {
      const r = await run(action, false);
      if (r.error) return setError(r.error);
      if (r.redrive) {
        onClose(true);
        return navigate(`/redrives/${r.redrive}`);
      }
      setDone(`${ACTIONS[action].label}: ${fmt(r.count)} dead letters changed.`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div role="dialog" aria-modal="true" aria-labelledby="bulk-title" className="dialog">
      <form onSubmit={confirm}>
        <h2 id="bulk-title">{selected ? `Act on ${fmt(selected.length)} selected` : matching ? `Act on all ${fmt(matching.count)}${matching.exact ? '' : '+'} matching` : 'Act on all matching'}</h2>
        {done ? (
          <>
            <p role="status" data-testid="bulk-done">{done}</p>
            <button type="button" onClick={() => onClose(true)}>Close</button>
          </>
        ) : (
          <>
            <fieldset>
              <legend>Action</legend>
              {(Object.keys(ACTIONS) as Action[]).map((a) => (
                <label key={a} className="check">
                  <input type="radio" name="action" value={a} checked={action === a} onChange={() => setAction(a)} /> {ACTIONS[a].label}
                </label>
              ))}
              <label className="check">
                <input type="radio" name="action" value="transform" checked={action === 'transform'} onChange={() => setAction('transform')} /> Transform payloads
              </label>
            </fieldset>
            {action === 'transform' ? (
              allowed ? (
                <Suspense fallback={<Loading what="patch editor" />}>
                  {selected ? <SelectedLeftOut filter={listFilter} ids={selected} /> : null}
                  <TransformPayloads filter={filter} onClose={onClose} />
                </Suspense>
              ) : (
                <p className="muted">{needs('OPERATOR')}</p>
              )
            ) : (
            <>
            {action === 'requeue' ? (
              <fieldset>
                <legend>Requeue options</legend>
                <fieldset>
                  <legend>Send to</legend>
                  <label className="check"><input type="radio" name="destination" checked={destination === 'POLICY'} onChange={() => setDestination('POLICY')} /> the policy’s target</label>
                  <label className="check"><input type="radio" name="destination" checked={destination === 'SOURCE'} onChange={() => setDestination('SOURCE')} /> to source: the queue, subject or stream each came from</label>
                </fieldset>
                <label className="check"><input type="checkbox" checked={force} onChange={(e) => setForce(e.target.checked)} /> also requeue finished events (succeeded, resolved, discarded)</label>
                <label className="check"><input type="checkbox" checked={resetAttempts} onChange={(e) => setResetAttempts(e.target.checked)} /> reset attempts</label>
                <label>Rate (events per second; makes it a throttled redrive)<input type="number" min={1} value={rate} onChange={(e) => setRate(e.target.value)} /></label>
                <fieldset>
                  <legend>Ramp and failure guard (optional)</legend>
                  <label>Start at (events per second, ramping up to the rate)<input type="number" min={1} value={startRate} onChange={(e) => setStartRate(e.target.value)} /></label>
                  <label>Ramp over (seconds)<input type="number" min={0} value={rampSeconds} onChange={(e) => setRampSeconds(e.target.value)} /></label>
                  <label>Pause itself when the failure share is above (0 to 1)<input type="number" min={0} max={1} step="0.01" value={guard} onChange={(e) => setGuard(e.target.value)} /></label>
                  <label>… of the last (deliveries)<input type="number" min={1} value={windowSize} onChange={(e) => setWindowSize(e.target.value)} /></label>
                </fieldset>
              </fieldset>
            ) : null}
            <label>
              Reason{ACTIONS[action].reasonRequired ? ' (required)' : ''}
              <input value={reason} onChange={(e) => setReason(e.target.value)} required={ACTIONS[action].reasonRequired} maxLength={2000} />
            </label>
            <ErrorNote error={error} />
            {preview ? (
              <section aria-label="Dry run" className="preview" data-testid="preview">
                <p><strong>{fmt(preview.count)}</strong>{preview.selected ? ` of the ${fmt(preview.selected.length)} selected` : ''} will be {action === 'delete' ? 'deleted' : `${action}d`}{action === 'requeue' && destination === 'SOURCE' ? ' to source' : ''}. Nothing has changed yet.</p>
                {action === 'requeue' && destination === 'SOURCE' && preview.withoutSource > 0 ? (
                  <p className="warning" data-testid="without-source">
                    {fmt(preview.withoutSource)} of them have no source (no origin, or their bridge is not declared here): narrow the filter, or the requeue is refused.
                  </p>
                ) : null}
                {preview.ineligible.length ? (
                  <ul>
                    {preview.ineligible.map((s) => <li key={`${s.status}|${s.why}`}>{fmt(s.count)} {s.status ? <StatusBadge status={s.status} /> : null} not eligible: {s.why}</li>)}
                  </ul>
                ) : null}
                {preview.sample.length ? (
                  <table className="plain-table">
                    <caption>Sample</caption>
                    <tbody>
                      {preview.sample.map((s) => <tr key={s.id}><td>{s.id}</td><td><StatusBadge status={s.status} /></td><td>{s.eventType}</td><td className="ellipsis">{s.error.message}</td></tr>)}
                    </tbody>
                  </table>
                ) : null}
                {preview.selected ? <SelectedPreview rows={preview.selected} verb={action === 'delete' ? 'deleted' : `${action}d`} /> : null}
              </section>
            ) : null}
            <div className="actions">
              <button type="button" onClick={() => void dryRun()} disabled={busy || !allowed} title={allowed ? undefined : needs(ACTIONS[action].role)}>Preview (dry run)</button>
              <button type="submit" className="danger" disabled={busy || !allowed || !preview || preview.count === 0 || (action === 'requeue' && destination === 'SOURCE' && preview.withoutSource > 0)}>
                Confirm {ACTIONS[action].label.toLowerCase()} of {preview ? fmt(preview.count) : '…'}
              </button>
              <button type="button" onClick={() => onClose(false)}>Cancel</button>
            </div>
            </>
            )}
          </>
        )}
      </form>
    </div>
  );
}
