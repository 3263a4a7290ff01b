// "Transform payloads" in the bulk actions: write a JSON Patch or a JSON Merge Patch (CodeMirror 6),
// preview it on everything matching (exact counts, failures by reason, before/after of the first few
// in a merge view with jsondiffpatch's list of operations), apply it as one recorded transform, and
// undo it. A transform larger than one batch is applied (and undone) by the service's runner in
// batches: the view follows its progress until it is APPLIED (UNDONE). Loaded only when chosen.
import { json, jsonParseLinter } from '@codemirror/lang-json';
import { linter, lintGutter } from '@codemirror/lint';
import { MergeView } from '@codemirror/merge';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { create } from 'jsondiffpatch';
import { format as toJsonPatch } from 'jsondiffpatch/formatters/jsonpatch';
import { useEffect, useMemo, useRef, useState } from 'react';
import type { DeadLetterFilter } from '../filters.ts';
import { graphql, readFragment, type ResultOf } from '../graphql.ts';
import { ErrorNote, fmt, mutationProblem, parseJson, StatusBadge, useSession } from '../ui.tsx';

const PreviewQuery = graphql(`
  query PreviewTransform($input: PreviewTransformInput!) {
    previewTransform(input: $input) {
      __typename
      ... on TransformPreview { matched changed unchanged failed failures { reason count ids } finished byStatus { status count } samples { id status before after } }
      ... on MutationError { code message }
    }
  }
`);
const TransformFields = graphql(`
  fragment TransformFields on Transform {
    id status matched processed changed unchanged failed skipped skippedIds error
    undoProcessed restored keptEdited keptEditedIds keptMissing
  }
`);
const ApplyMutation = graphql(`
  mutation ApplyTransform($input: ApplyTransformInput!) {
    applyTransform(input: $input) {
      __typename
      ... on Transform { ...TransformFields }
      ... on TransformNotApplicableError { failed failures { reason count ids } }
      ... on MutationError { code message }
    }
  }
`, [TransformFields]);
const UndoMutation = graphql(`
  mutation UndoTransform($input: UndoTransformInput!) {
    undoTransform(input: $input) {
      __typename
      ... on UndoTransformResult { transform { ...TransformFields } }
      ... on MutationError { code message }
    }
  }
`, [TransformFields]);
const TransformQuery = graphql(`query Transform($id: ID!) { transform(id: $id) { ...TransformFields } }`, [TransformFields]);
type Transform = ResultOf<typeof TransformFields>;
const ACTIVE = new Set(['RUNNING', 'UNDOING']);
/** Statuses whose retrying has ended (as FINISHED_STATUSES in src/domain/payloadTransforms.ts). */
const FINISHED: readonly string[] = ['SUCCEEDED', 'RESOLVED', 'DISCARDED'];

type Kind = 'patch' | 'mergePatch';
type Preview = Extract<NonNullable<ResultOf<typeof PreviewQuery>['previewTransform']>, { __typename: 'TransformPreview' }>;
const STARTERS: Record<Kind, string> = {
  patch: '[\n  { "op": "replace", "path": "/field", "value": "new value" }\n]',
  mergePatch: '{\n  "field": "new value"\n}',
};
const differ = create({ objectHash: (o: object) => JSON.stringify(o) });

export default function TransformPayloads({ filter, onClose }: { filter: DeadLetterFilter; onClose: (changed: boolean) => void }) {
  const { api } = useSession();
  const [kind, setKind] = useState<Kind>('patch');
  const [text, setText] = useState(STARTERS.patch);
  const [reason, setReason] = useState('');
  const [requeue, setRequeue] = useState(false);
  const [preview, setPreview] = useState<Preview | null>(null);
  const [applied, setApplied] = useState<Transform | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!box.current) return;
    const view = new EditorView({
      parent: box.current,
      state: EditorState.create({
        doc: STARTERS[kind],
        extensions: [
          basicSetup,
          json(),
          linter(jsonParseLinter()),
          lintGutter(),
          EditorView.contentAttributes.of({ 'aria-label': kind === 'patch' ? 'JSON Patch (RFC 6902)' : 'JSON Merge Patch (RFC 7396)' }),
          EditorView.updateListener.of((u) => u.docChanged && setText(u.state.doc.toString())),
        ],
      }),
    });
    setText(STARTERS[kind]);
    return () => view.destroy();
  }, [kind]);

  const parsed = useMemo(() => parseJson(text), [text]);
  useEffect(() => setPreview(null), [text, kind]);

  const input = () => ({ filter, [kind]: parsed.ok ? parsed.value : null });

  const runPreview = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await api.urql.query(PreviewQuery, { input: { ...input(), sample: 5 } }, { requestPolicy: 'network-only' }).toPromise();
      const problem = mutationProblem(r);
      if (problem) return setError(problem);
      const data = r.data?.previewTransform;
      if (data?.__typename === 'TransformPreview') setPreview(data);
    } finally {
      setBusy(false);
    }
  };

  const apply = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await api.urql.mutation(ApplyMutation, { input: { ...input(), reason: reason.trim() || undefined, requeue } }).toPromise();
      const problem = mutationProblem(r);
      if (problem) return setError(problem);
      const data = r.data?.applyTransform;
      if (data?.__typename === 'Transform') setApplied(readFragment(TransformFields, data));
    } finally {
      setBusy(false);
    }
  };

  // Progress of a transform the runner applies or undoes in batches: re-read every second until done.
  const active = applied !== null && ACTIVE.has(applied.status);
  useEffect(() => {
    if (!active || !applied) return;
    const timer = setInterval(async () => {
      const r = await api.urql.query(TransformQuery, { id: applied.id }, { requestPolicy: 'network-only' }).toPromise();
      if (r.data?.transform) setApplied(readFragment(TransformFields, r.data.transform));
    }, 1_000);
    return () => clearInterval(timer);
  }, [active, applied?.id, api]);

  const undo = async () => {
    if (!applied) return;
    setBusy(true);
    setError(null);
    try {
      const r = await api.urql.mutation(UndoMutation, { input: { id: applied.id } }).toPromise();
      const problem = mutationProblem(r);
      if (problem) return setError(problem);
      const data = r.data?.undoTransform;
      if (data?.__typename === 'UndoTransformResult') setApplied(readFragment(TransformFields, data.transform));
    } finally {
      setBusy(false);
    }
  };

  if (applied) {
    const t = applied;
    const undoing = t.status === 'UNDOING' || t.status === 'UNDONE';
    const skipped = t.skipped ? ` ${fmt(t.skipped)} skipped because they were edited, being delivered or deleted after it was checked (${t.skippedIds.join(', ')}).` : '';
    const kept = t.keptEdited ? ` ${fmt(t.keptEdited)} left as they are because they were edited since (${t.keptEditedIds.join(', ')}).` : '';
    const gone = t.keptMissing ? ` ${fmt(t.keptMissing)} were deleted since.` : '';
    return (
      <section aria-label="Transform applied" data-testid="transform-done">
        {t.status === 'RUNNING' ? (
          <p role="status" data-testid="transform-progress">
            <progress value={t.processed} max={Math.max(t.matched, 1)} aria-label={`Transform ${t.id} progress`} />{' '}
            Transform {t.id} running: {fmt(t.processed)} of {fmt(t.matched)} handled, {fmt(t.changed)} payloads changed so far.
          </p>
        ) : (
          <p role="status">Transform {t.id} applied: {fmt(t.changed)} payloads changed.{skipped} Each event’s history records it.</p>
        )}
        {t.failed ? <p className="error-note">{fmt(t.failed)} left as they were: the patch does not apply to them.</p> : null}
        {t.status === 'FAILED' ? <p role="alert" className="error-note">Transform {t.id} failed: {t.error}. Undo it to restore what it changed.</p> : null}
        {t.status === 'UNDOING' ? (
          <p role="status" data-testid="transform-undo-progress">
            <progress value={t.undoProcessed} max={Math.max(t.changed, 1)} aria-label={`Undo of transform ${t.id} progress`} />{' '}
            Undoing transform {t.id}: {fmt(t.undoProcessed)} of {fmt(t.changed)} handled, {fmt(t.restored)} restored so far.
          </p>
        ) : null}
        {t.status === 'UNDONE' ? <p role="status" data-testid="transform-undone">Transform {t.id} undone: {fmt(t.restored)} payloads restored.{kept}{gone}</p> : null}
        <ErrorNote error={error} />
        <div className="actions">
          {undoing ? null : <button type="button" onClick={() => void undo()} disabled={busy}>Undo transform {t.id}</button>}
          <button type="button" onClick={() => onClose(true)}>Close</button>
        </div>
      </section>
    );
  }

  const canApply = preview !== null && preview.changed > 0 && preview.failed === 0;
  return (
    <section aria-label="Transform payloads">
      <fieldset>
        <legend>Patch</legend>
        <label className="check"><input type="radio" name="patch-kind" checked={kind === 'patch'} onChange={() => setKind('patch')} /> JSON Patch (RFC 6902)</label>
        <label className="check"><input type="radio" name="patch-kind" checked={kind === 'mergePatch'} onChange={() => setKind('mergePatch')} /> JSON Merge Patch (RFC 7396)</label>
      </fieldset>
      <div ref={box} className="patch-editor" data-testid="patch-editor" />
      {!parsed.ok ? <p role="alert" className="error-note">Not valid JSON: {parsed.message}</p> : null}
      <label>Reason<input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={2000} /></label>
      <label className="check"><input type="checkbox" checked={requeue} onChange={(e) => setRequeue(e.target.checked)} /> requeue changed pending and exhausted events</label>
      <ErrorNote error={error} />
      {preview ? <TransformPreviewView preview={preview} /> : null}
      <div className="actions">
        <button type="button" onClick={() => void runPreview()} disabled={busy || !parsed.ok}>Preview transform</button>
        <button type="button" className="danger" onClick={() => void apply()} disabled={busy || !canApply}>
          Apply to {preview ? fmt(preview.changed) : '…'}
        </button>
        <button type="button" onClick={() => onClose(false)}>Cancel</button>
      </div>
    </section>
  );
}

function TransformPreviewView({ preview }: { preview: Preview }) {
  return (
    <section aria-label="Transform preview" className="preview" data-testid="transform-preview">
      <p>
        Of <strong>{fmt(preview.matched)}</strong> matching: <strong data-testid="transform-changed">{fmt(preview.changed)}</strong> change,{' '}
        {fmt(preview.unchanged)} stay the same, {fmt(preview.failed)} the patch does not apply to. Nothing has changed yet.
      </p>
      {preview.finished > 0 ? (
        <p role="alert" className="warning" data-testid="transform-finished">
          {fmt(preview.finished)} of them already ended:{' '}
          {preview.byStatus.filter((s) => FINISHED.includes(s.status)).map((s) => `${fmt(s.count)} ${s.status}`).join(', ')}.
          The transform rewrites their stored payloads too (one fixed by hand, say), though nothing redelivers them.
          To leave them alone, narrow the filter to pending and exhausted events.
        </p>
      ) : null}
      {preview.failures.length ? (
        <>
          <p className="error-note">All or nothing: while the patch fails on any event, it cannot be applied.</p>
          <ul data-testid="transform-failures">
            {preview.failures.map((f) => <li key={f.reason}>{fmt(f.count)}: {f.reason} (e.g. {f.ids.join(', ')})</li>)}
          </ul>
        </>
      ) : null}
      {preview.samples.map((s) => <SampleDiff key={s.id} id={s.id} status={s.status} before={s.before} after={s.after} />)}
    </section>
  );
}

function SampleDiff({ id, status, before, after }: { id: string; status: string; before: unknown; after: unknown }) {
  const box = useRef<HTMLDivElement>(null);
  const operations = useMemo(() => {
    const delta = differ.diff(before, after);
    return delta ? toJsonPatch(delta) : [];
  }, [before, after]);
  useEffect(() => {
    if (!box.current) return;
    const readOnly = (label: string) => [
      basicSetup, json(), EditorState.readOnly.of(true), EditorView.editable.of(false), EditorView.contentAttributes.of({ 'aria-label': label }),
    ];
    const view = new MergeView({
      a: { doc: JSON.stringify(before, null, 2), extensions: readOnly(`Event ${id}: payload before`) },
      b: { doc: JSON.stringify(after, null, 2), extensions: readOnly(`Event ${id}: payload after`) },
      parent: box.current,
    });
    return () => view.destroy();
  }, [id, before, after]);
  return (
    <figure className="sample-diff" data-testid="transform-sample">
      <figcaption>
        Event {id} <StatusBadge status={status} />: before (left) and after (right)
        {FINISHED.includes(status) ? <strong className="field-error"> Already {status}: this rewrites a payload whose retrying has ended.</strong> : null}
      </figcaption>
      <ul className="ops">
        {operations.map((op, i) => (
          <li key={i}><code>{op.op}</code> <code>{op.path}</code>{'value' in op ? <> → <code>{JSON.stringify(op.value)}</code></> : null}</li>
        ))}
      </ul>
      <div ref={box} className="merge" />
    </figure>
  );
}
