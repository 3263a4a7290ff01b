// The dry run on ticked rows, row by row: each selected id with its status now and what the action
// would do to it, or why it is left out. Nothing selected is dropped without a word.
import { useEffect, useState } from 'react';
import type { DeadLetterFilter } from '../filters.ts';
import { ErrorNote, fmt, StatusBadge, useSession } from '../ui.tsx';
import { readSelectedRows, whyLeftOut, type SelectedRow } from './selectedRows.ts';

/** A selected row and why the action leaves it alone (null: it acts on it). */
export type SelectedOutcome = SelectedRow & { why: string | null };

export function SelectedPreview({ rows, verb }: { rows: readonly SelectedOutcome[]; verb: string }) {
  return (
    <div className="selected-rows" role="region" aria-label="Selected rows in this dry run" tabIndex={0}>
      <table className="plain-table" data-testid="selected-preview">
        <caption>The selected rows</caption>
        <thead>
          <tr><th scope="col">Id</th><th scope="col">Status now</th><th scope="col">Event type</th><th scope="col">In this action</th></tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.id} data-testid="selected-row">
              <td>{r.id}</td>
              <td>{r.now ? <StatusBadge status={r.now.status} /> : '—'}</td>
              <td>{r.now?.eventType ?? '—'}</td>
              <td>{r.why === null ? `will be ${verb}` : `not eligible: ${r.why}`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** For a transform on ticked rows: those it cannot reach (deleted, or no longer matching), and why. */
export function SelectedLeftOut({ filter, ids }: { filter: DeadLetterFilter; ids: readonly string[] }) {
  const { api } = useSession();
  const [rows, setRows] = useState<SelectedOutcome[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let cancelled = false;
    readSelectedRows(api, filter, ids).then(
      (all) => !cancelled && setRows(all.map((r) => ({ ...r, why: whyLeftOut(r) })).filter((r) => r.why !== null)),
      (e: unknown) => !cancelled && setError(e),
    );
    return () => {
      cancelled = true;
    };
  }, [api, filter, ids]);
  if (error) return <ErrorNote error={error} />;
  if (!rows?.length) return null;
  return (
    <div className="preview" data-testid="selected-left-out">
      <p>{fmt(rows.length)} of the {fmt(ids.length)} selected will not be transformed:</p>
      <SelectedPreview rows={rows} verb="transformed" />
    </div>
  );
}
