// "Transform payloads" in the bulk actions: write a JSON Patch or a JSON Merge Patch (CodeMirror 6),
// preview it on everything matching (exact counts, failures by reason, before/after of the first few
// in a merge view with jsondiffpatch's list of operations), apply it as one recorded transform, and
// undo it. Loaded only when chosen.
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
import { graphql, type ResultOf } from '../graphql.ts';
import { ErrorNote, fmt, mutationProblem, parseJson, useSession } from '../ui.tsx';

const PreviewQuery = graphql(`
  query PreviewTransform($input: PreviewTransformInput!) {
    previewTransform(input: $input) {
      __typename
      ... on TransformPreview { matched changed unchanged failed failures { reason count ids } samples { id before after } }
      ... on MutationError { code message }
    }
  }
`);
const ApplyMutation = graphql(`
  mutation ApplyTransform($input: ApplyTransformInput!) {
    applyTransform(input: $input) {
      __typename
      ... on Transform { id changed unchanged }
      ... on TransformNotApplicableError { failed failures { reason count ids } }
      ... on MutationError { code message }
    }
  }
`);
const UndoMutation = graphql(`
  mutation UndoTransform($input: UndoTransformInput!) {
    undoTransform(input: $input) {
      __typename
      ... on UndoTransformResult { restored edited editedIds missing }
      ... on MutationError { code message }
    }
  }
`);

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
  const [applied, setApplied] = useState<{ id: string; changed: number } | null>(null);
  const [undone, setUndone] = useState<string | null>(null);
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
      if (data?.__typename === 'Transform') setApplied({ id: data.id, changed: data.changed });
    } finally {
      setBusy(false);
    }
  };

  const undo = async () => {
    if (!applied) return;
    setBusy(true);
    setError(null);
    try {
      const r = await api.urql.mutation(UndoMutation, { input: { id: applied.id } }).toPromise();
      const problem = mutationProblem(r);
      if (problem) return setError(problem);
      const data = r.data?.undoTransform;
      if (data?.__typename !== 'UndoTransformResult') return;
      const kept = data.edited ? ` ${fmt(data.edited)} left as they are because they were edited since (${data.editedIds.join(', ')}).` : '';
      const gone = data.missing ? ` ${fmt(data.missing)} were deleted since.` : '';
      setUndone(`Transform ${applied.id} undone: ${fmt(data.restored)} payloads restored.${kept}${gone}`);
    } finally {
      setBusy(false);
    }
  };

  if (applied) {
    return (
      <section aria-label="Transform applied" data-testid="transform-done">
        <p role="status">Transform {applied.id} applied: {fmt(applied.changed)} payloads changed. Each event’s history records it.</p>
        {undone ? <p role="status" data-testid="transform-undone">{undone}</p> : null}
        <ErrorNote error={error} />
        <div className="actions">
          {undone ? null : <button type="button" onClick={() => void undo()} disabled={busy}>Undo transform {applied.id}</button>}
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
      {preview.failures.length ? (
        <>
          <p className="error-note">All or nothing: while the patch fails on any event, it cannot be applied.</p>
          <ul data-testid="transform-failures">
            {preview.failures.map((f) => <li key={f.reason}>{fmt(f.count)}: {f.reason} (e.g. {f.ids.join(', ')})</li>)}
          </ul>
        </>
      ) : null}
      {preview.samples.map((s) => <SampleDiff key={s.id} id={s.id} before={s.before} after={s.after} />)}
    </section>
  );
}

function SampleDiff({ id, before, after }: { id: string; before: unknown; after: unknown }) {
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
      <figcaption>Event {id}: before (left) and after (right)</figcaption>
      <ul className="ops">
        {operations.map((op, i) => (
          <li key={i}><code>{op.op}</code> <code>{op.path}</code>{'value' in op ? <> → <code>{JSON.stringify(op.value)}</code></> : null}</li>
        ))}
      </ul>
      <div ref={box} className="merge" />
    </figure>
  );
}
