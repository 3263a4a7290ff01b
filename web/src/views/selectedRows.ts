// What became of ticked rows: for each selected id, whether it still exists, whether it still
// matches the list's filter (an action on a selection acts on `{ ...filter, ids }`, so one that no
// longer matches is left alone), and its status now. The bulk dry run explains every id from this.
import type { Api } from '../api.ts';
import type { DeadLetterFilter } from '../filters.ts';
import { graphql } from '../graphql.ts';

/** A page holds at most 500 dead letters (MAX_PAGE_SIZE in src/reads/deadLetterPages.ts). */
const CHUNK = 500;

const SelectedQuery = graphql(`
  query SelectedRows($all: DeadLetterFilter, $matching: DeadLetterFilter, $first: Int) {
    all: deadLetters(filter: $all, first: $first) { edges { node { id status eventType error { kind message } } } }
    matching: deadLetters(filter: $matching, first: $first) { edges { node { id } } }
  }
`);

export interface SelectedRow {
  id: string;
  /** Null when the id names no dead letter any more (deleted). */
  now: { status: string; eventType: string; error: { kind: string; message: string } } | null;
  matchesFilter: boolean;
}

/** The selection narrowed by the list's filter: what a bulk action on the selection acts on. */
export const selectionFilter = (filter: DeadLetterFilter, ids: readonly string[]): DeadLetterFilter => ({ ...filter, ids: [...ids] });

/** Every selected id, in the order given, as it is now. */
export async function readSelectedRows(api: Api, filter: DeadLetterFilter, ids: readonly string[]): Promise<SelectedRow[]> {
  const rows: SelectedRow[] = [];
  for (let at = 0; at < ids.length; at += CHUNK) {
    const chunk = ids.slice(at, at + CHUNK);
    const r = await api.urql.query(SelectedQuery, { all: { ids: chunk }, matching: selectionFilter(filter, chunk), first: chunk.length }).toPromise();
    if (r.error || !r.data) throw r.error ?? new Error('no data');
    const found = new Map(r.data.all.edges.map((e) => [e.node.id, e.node]));
    const matching = new Set(r.data.matching.edges.map((e) => e.node.id));
    for (const id of chunk) rows.push({ id, now: found.get(id) ?? null, matchesFilter: matching.has(id) });
  }
  return rows;
}

/** Why a selected row is left out before the action's own rules apply; null when it is in. */
export function whyLeftOut(row: SelectedRow): string | null {
  if (!row.now) return 'no longer exists (deleted)';
  if (!row.matchesFilter) return 'no longer matches this list’s filter';
  return null;
}
