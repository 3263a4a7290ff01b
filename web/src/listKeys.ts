// A list's keyboard shortcuts: j/k move the cursor row, x ticks it, Enter opens it, / goes to the
// search box. They do nothing while the reader types (a text field, a select, an editor), fills a
// form (the filter bar), holds a modifier, or works in a dialog; a row's own checkbox is none of
// those, so they work from there.
import { useCallback, useEffect, useRef, useState } from 'react';

export const LIST_SHORTCUTS: readonly (readonly [keys: string, what: string])[] = [
  ['j / k', 'next / previous row'],
  ['x', 'tick the row (Space on its checkbox too)'],
  ['Enter', 'open the event'],
  ['/', 'search'],
];

export interface ListKeyHandlers {
  move: (by: 1 | -1) => void;
  toggle: () => void;
  open: () => void;
  search: () => void;
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target.closest('.cm-editor, form')) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  return target instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit', 'reset'].includes(target.type);
}

/** Listens on the document while mounted; the latest handlers are used without re-subscribing. */
export function useListKeys(handlers: ListKeyHandlers): void {
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
      // An open dialog (the bulk actions) has the keyboard to itself.
      if (document.querySelector('[role="dialog"]')) return;
      const h = latest.current;
      const actions: Record<string, () => void> = { j: () => h.move(1), k: () => h.move(-1), x: h.toggle, Enter: h.open, '/': h.search };
      const action = actions[event.key];
      if (!action) return;
      // Enter on a link or a button keeps its own meaning.
      if (event.key === 'Enter' && event.target instanceof HTMLElement && event.target.closest('a, button')) return;
      event.preventDefault();
      action();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

/**
 * The cursor row of a list of `count` rows, moved by j/k: it is the row whose checkbox has focus (a
 * key move focuses the checkbox once its row is rendered: pass `focusCheckbox` as the cursor row's
 * checkbox ref, and `setCursor` on its focus, so Tab and a click move the cursor too).
 */
export function useListCursor(o: { count: number; scrollTo: (index: number) => void; toggle: (index: number) => void; open: (index: number) => void; search: () => void }) {
  const [cursor, setCursor] = useState(-1);
  const isFocusWanted = useRef(false);
  const focusCheckbox = useCallback((input: HTMLInputElement | null) => {
    if (input && isFocusWanted.current) {
      isFocusWanted.current = false;
      input.focus();
    }
  }, []);
  const isOnRow = cursor >= 0 && cursor < o.count;
  useListKeys({
    move: (by) => {
      if (!o.count) return;
      const next = Math.min(o.count - 1, Math.max(0, cursor + by));
      if (next === cursor) return;
      isFocusWanted.current = true;
      setCursor(next);
      o.scrollTo(next);
    },
    toggle: () => (isOnRow ? o.toggle(cursor) : undefined),
    open: () => (isOnRow ? o.open(cursor) : undefined),
    search: o.search,
  });
  return { cursor, setCursor, focusCheckbox };
}
