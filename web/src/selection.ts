// Ticked rows of a dead-letter list: a set of ids, so it holds across cursor pages, live updates
// (a row that changes or goes stays ticked, and the dry run says what became of it) and a visit to
// an event and back. Each list (its path and filter) has its own, kept for this tab in sessionStorage.
import { useCallback, useEffect, useState } from 'react';

/** As many ids as a `DeadLetterFilter.ids` takes; "Act on all matching" covers more. */
export const MAX_SELECTED = 1000;
const STORAGE_PREFIX = 'lazarus.selection:';

export interface Selection {
  ids: ReadonlySet<string>;
  /** Ticks or unticks one row; false when ticking would pass MAX_SELECTED. */
  toggle: (id: string) => boolean;
  /** Ticks (or, with false, unticks) many rows at once, up to MAX_SELECTED; false when some did not fit. */
  setMany: (ids: readonly string[], isSelected: boolean) => boolean;
  clear: () => void;
}

function read(key: string): Set<string> {
  try {
    const stored: unknown = JSON.parse(sessionStorage.getItem(key) ?? '[]');
    return new Set(Array.isArray(stored) ? stored.filter((id): id is string => typeof id === 'string').slice(0, MAX_SELECTED) : []);
  } catch (e) {
    console.warn('ignoring an unreadable stored selection', e);
    return new Set();
  }
}

export function useSelection(scope: string): Selection {
  const key = STORAGE_PREFIX + scope;
  const [state, setState] = useState(() => ({ key, ids: read(key) as ReadonlySet<string> }));
  // Another list (a new filter) has its own selection.
  const current = state.key === key ? state : { key, ids: read(key) as ReadonlySet<string> };
  if (current !== state) setState(current);
  const ids = current.ids;

  useEffect(() => {
    if (ids.size) sessionStorage.setItem(key, JSON.stringify([...ids]));
    else sessionStorage.removeItem(key);
  }, [key, ids]);

  // Updates build on the latest set, so two quick ticks before a render both count.
  const toggle = useCallback((id: string) => {
    if (!ids.has(id) && ids.size >= MAX_SELECTED) return false;
    setState((s) => {
      const next = new Set(s.ids);
      if (!next.delete(id)) next.add(id);
      return { key, ids: next };
    });
    return true;
  }, [key, ids]);
  const setMany = useCallback((many: readonly string[], isSelected: boolean) => {
    const next = new Set(ids);
    let isAllIn = true;
    for (const id of many) {
      if (!isSelected) next.delete(id);
      else if (next.size < MAX_SELECTED) next.add(id);
      else isAllIn = isAllIn && next.has(id);
    }
    setState({ key, ids: next });
    return isAllIn;
  }, [key, ids]);
  // At once, not in the effect: a list that clears its selection as it navigates away unmounts first.
  const clear = useCallback(() => {
    sessionStorage.removeItem(key);
    setState({ key, ids: new Set() });
  }, [key]);
  return { ids, toggle, setMany, clear };
}
