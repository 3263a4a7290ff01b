// Edit a payload as JSON (CodeMirror 6), see what changes (a side-by-side merge view and
// jsondiffpatch's list of operations), then save, or save and retry. Loaded only when editing.
import { json, jsonParseLinter } from '@codemirror/lang-json';
import { linter, lintGutter } from '@codemirror/lint';
import { MergeView } from '@codemirror/merge';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { create } from 'jsondiffpatch';
import { format as toJsonPatch } from 'jsondiffpatch/formatters/jsonpatch';
import { useEffect, useMemo, useRef, useState } from 'react';
import { ErrorNote, mutationProblem, parseJson, useSession } from '../ui.tsx';
import { EditPayload, type EditableEvent } from './editPayload.ts';

const differ = create({ objectHash: (o: object) => JSON.stringify(o) });

export default function PayloadEditor({ dl, onDone }: { dl: EditableEvent; onDone: () => void }) {
  const { api } = useSession();
  const original = useMemo(() => JSON.stringify(dl.payload, null, 2), [dl.payload]);
  const [text, setText] = useState(original);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!box.current) return;
    const view = new MergeView({
      a: { doc: original, extensions: [basicSetup, json(), EditorState.readOnly.of(true), EditorView.editable.of(false)] },
      b: {
        doc: original,
        extensions: [
          basicSetup,
          json(),
          linter(jsonParseLinter()),
          lintGutter(),
          EditorView.contentAttributes.of({ 'aria-label': 'New payload (JSON)' }),
          EditorView.updateListener.of((u) => u.docChanged && setText(u.state.doc.toString())),
        ],
      },
      parent: box.current,
    });
    return () => view.destroy();
  }, [original]);

  const parsed = useMemo(() => parseJson(text), [text]);
  const operations = useMemo(() => {
    if (!parsed.ok) return [];
    const delta = differ.diff(dl.payload, parsed.value);
    return delta ? toJsonPatch(delta) : [];
  }, [dl.payload, parsed]);

  const save = async (requeue: boolean) => {
    if (!parsed.ok) return;
    setBusy(true);
    const r = await api.urql
      .mutation(EditPayload, { input: { id: dl.id, payload: parsed.value, expectedVersion: dl.version, reason: reason.trim() || undefined, requeue } })
      .toPromise();
    setBusy(false);
    const problem = mutationProblem(r);
    if (problem) return setError(problem);
    onDone();
  };

  return (
    <div className="editor">
      <p className="muted">Left: the payload now. Right: your edit.</p>
      <div ref={box} className="merge" data-testid="payload-editor" />
      {!parsed.ok ? <p role="alert" className="error-note">Not valid JSON: {parsed.message}</p> : null}
      <section aria-label="Changes" data-testid="diff">
        {operations.length === 0 ? (
          <p className="muted">No changes yet.</p>
        ) : (
          <ul className="ops">
            {operations.map((op, i) => (
              <li key={i}><code>{op.op}</code> <code>{op.path}</code>{'value' in op ? <> → <code>{JSON.stringify(op.value)}</code></> : null}</li>
            ))}
          </ul>
        )}
      </section>
      <label>Reason<input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={2000} /></label>
      <ErrorNote error={error} />
      <div className="actions">
        <button onClick={() => void save(false)} disabled={busy || !parsed.ok || operations.length === 0}>Save</button>
        <button onClick={() => void save(true)} disabled={busy || !parsed.ok || operations.length === 0}>Save and retry</button>
        <button onClick={onDone}>Cancel</button>
      </div>
    </div>
  );
}
