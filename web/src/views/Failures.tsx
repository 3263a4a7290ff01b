import { useReactTable, getCoreRowModel, flexRender, type ColumnDef } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type RefObject } from 'react';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import { useLiveStream } from '../api.ts';
import { LIST_SHORTCUTS, useListCursor } from '../listKeys.ts';
import { MAX_SELECTED, useSelection } from '../selection.ts';
import { ERROR_KINDS, filterFromParams, ORDERS, orderFromParams, STATUSES, TEXT_FILTERS, type DeadLetterFilter } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { ago, ErrorNote, fmt, StatusBadge, useCan, useSession } from '../ui.tsx';
import { HeldBadge } from '../held.tsx';
import { BulkActions } from './BulkActions.tsx';

export const FailuresQuery = graphql(`
  query Failures($filter: DeadLetterFilter, $orderBy: DeadLetterOrder, $first: Int, $after: String) {
    deadLetters(filter: $filter, orderBy: $orderBy, first: $first, after: $after) {
      boundedCount(limit: 10000) { count exact }
      pageInfo { hasNextPage endCursor }
      edges { node { id status eventType queue source attempts createdAt updatedAt nextAttemptAt error { kind message } held { reason policyEventType headId } } }
    }
  }
`);

const FailuresChanged = graphql(`
  subscription FailuresChanged($filter: DeadLetterFilter, $after: String) {
    deadLetterChanged(filter: $filter, after: $after) {
      cursor isNew deleted deadLetterId
      deadLetter { id status eventType queue source attempts createdAt updatedAt nextAttemptAt error { kind message } held { reason policyEventType headId } }
    }
  }
`);

type Row = ResultOf<typeof FailuresQuery>['deadLetters']['edges'][number]['node'];
const PAGE = 100;
/** A row's height: dense, one line (styles.css sets the same on `.grid tbody td`). */
const ROW_HEIGHT_PX = 28;

const columns: ColumnDef<Row>[] = [
  // Its cells and header also hold the row's checkbox (see the table below).
  { header: 'Id', accessorKey: 'id', cell: (c) => <Link to={`/failures/${c.row.original.id}`}>{c.row.original.id}</Link>, size: 130 },
  // A held event's "why" is the badge's title; its page says what releases it.
  { header: 'Status', accessorKey: 'status', cell: (c) => <><StatusBadge status={c.row.original.status} />{c.row.original.held ? <>{' '}<HeldBadge hold={c.row.original.held} eventType={c.row.original.eventType} /></> : null}</>, size: 250 },
  { header: 'Event type', accessorKey: 'eventType', size: 170 },
  { header: 'Queue', accessorKey: 'queue', size: 120 },
  { header: 'Error', accessorFn: (r) => `${r.error.kind}: ${r.error.message}`, cell: (c) => <span className="ellipsis" title={c.row.original.error.message}><span className="kind">{c.row.original.error.kind}</span> {c.row.original.error.message}</span>, size: 420 },
  // Wide enough for its bold header with the cell padding (80 px cut it to "Attemp…").
  { header: 'Attempts', accessorKey: 'attempts', size: 100 },
  { header: 'Created', accessorKey: 'createdAt', cell: (c) => <span title={c.row.original.createdAt}>{ago(c.row.original.createdAt)}</span>, size: 110 },
];

/**
 * The failures list. `fixed` is ANDed with the URL's filter, which narrows it further (a group's
 * page shows its members this way); `heading` replaces the page title when embedded.
 */
export function Failures({ fixed, heading }: { fixed?: DeadLetterFilter; heading?: string } = {}) {
  const [params, setParams] = useSearchParams();
  const filter = useMemo(() => ({ ...filterFromParams(params), ...fixed }), [params, fixed]);
  const orderBy = useMemo(() => orderFromParams(params), [params]);
  const { api } = useSession();
  const client = api.urql;
  const [rows, setRows] = useState<Row[]>([]);
  const [page, setPage] = useState<{ hasNextPage: boolean; endCursor: string | null; count: { count: number; exact: boolean } | null }>({ hasNextPage: false, endCursor: null, count: null });
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [fresh, setFresh] = useState(0);
  // Acting on the selection takes it as it was when the dialog opened.
  const [bulk, setBulk] = useState<{ selected?: string[] } | null>(null);
  const canAct = useCan('OPERATOR');
  const selection = useSelection(`${useLocation().pathname}?${JSON.stringify(filter)}`);
  const [isFull, setIsFull] = useState(false);
  const tick = (id: string) => setIsFull(!selection.toggle(id));

  const load = useCallback(
    async (after: string | null) => {
      setLoading(true);
      const result = await client.query(FailuresQuery, { filter, orderBy, first: PAGE, after }).toPromise();
      setLoading(false);
      if (result.error || !result.data) return setError(result.error ?? new Error('no data'));
      setError(null);
      const c = result.data.deadLetters;
      setRows((old) => (after ? [...old, ...c.edges.map((e) => e.node)] : c.edges.map((e) => e.node)));
      setPage({ hasNextPage: c.pageInfo.hasNextPage, endCursor: c.pageInfo.endCursor ?? null, count: c.boundedCount });
      if (!after) setFresh(0);
    },
    [client, filter, orderBy],
  );
  useEffect(() => void load(null), [load]);

  // Changes stream in without moving the list: rows on screen update in place, deleted ones go,
  // and new ones are counted in a pill until the reader asks for them. Changes are applied at most
  // every 100 ms, so a thousand inserts a second cost ten renders, not a thousand (a timer, not
  // requestAnimationFrame, so a tab in the background still keeps count).
  const pending = useRef<{ fresh: number; changes: Map<string, Row | null>; timer: ReturnType<typeof setTimeout> | null }>({ fresh: 0, changes: new Map(), timer: null });
  const flush = useCallback(() => {
    const p = pending.current;
    p.timer = null;
    const fresh = p.fresh;
    if (fresh) setFresh((n) => n + fresh);
    if (p.changes.size) {
      const changes = p.changes;
      setRows((old) => (old.some((r) => changes.has(r.id)) ? old.flatMap((r) => (changes.has(r.id) ? (changes.get(r.id) ? [changes.get(r.id)!] : []) : [r])) : old));
    }
    p.fresh = 0;
    p.changes = new Map();
  }, []);
  useEffect(() => () => clearTimeout(pending.current.timer ?? undefined), []);
  useLiveStream(api, {
    query: FailuresChanged,
    variables: { filter },
    cursorOf: (d: ResultOf<typeof FailuresChanged>) => d.deadLetterChanged.cursor,
    onData: (d: ResultOf<typeof FailuresChanged>) => {
      const change = d.deadLetterChanged;
      const p = pending.current;
      if (change.isNew) p.fresh += 1;
      else p.changes.set(change.deadLetterId, change.deleted ? null : change.deadLetter);
      p.timer ??= setTimeout(flush, 100);
    },
    onError: (message) => setError(new Error(message)),
  });

  const table = useReactTable({ data: rows, columns, getCoreRowModel: getCoreRowModel(), getRowId: (r) => r.id });
  const scroller = useRef<HTMLDivElement>(null);
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT_PX, overscan: 12 });
  const items = virtual.getVirtualItems();
  // Near the bottom, the next page loads (keyset: after the last cursor).
  const lastItem = items[items.length - 1];
  useEffect(() => {
    if (lastItem && lastItem.index >= rows.length - 20 && page.hasNextPage && !loading) void load(page.endCursor);
  }, [lastItem, rows.length, page, loading, load]);

  const search = useRef<HTMLInputElement>(null);
  const navigate = useNavigate();
  const { cursor, setCursor, focusCheckbox } = useListCursor({
    count: rows.length,
    scrollTo: (index) => virtual.scrollToIndex(index, { align: 'auto' }),
    toggle: (index) => tick(rows[index]!.id),
    open: (index) => void navigate(`/failures/${rows[index]!.id}`),
    search: () => search.current?.focus(),
  });
  const loaded = rows.map((r) => r.id);
  const loadedSelected = loaded.filter((id) => selection.ids.has(id)).length;

  const countText = page.count ? `${fmt(page.count.count)}${page.count.exact ? '' : '+'}` : '…';
  return (
    <div className="failures">
      {heading ? <h2>{heading}</h2> : <h1>Failures</h1>}
      <FilterBar params={params} setParams={setParams} search={search} />
      <div className="toolbar">
        <span data-testid="matching">{countText} matching</span>
        {fresh > 0 ? (
          <button className="pill" onClick={() => void load(null)} data-testid="new-pill">{fmt(fresh)} new — show</button>
        ) : null}
        <span className="spacer" />
        {selection.ids.size > 0 ? (
          <>
            <span data-testid="selected-count">{fmt(selection.ids.size)} selected</span>
            <button className="link" onClick={() => { selection.clear(); setIsFull(false); }}>clear selection</button>
            <button onClick={() => setBulk({ selected: [...selection.ids] })} disabled={!canAct} title={canAct ? undefined : 'needs the operator role'}>
              Act on {fmt(selection.ids.size)} selected…
            </button>
          </>
        ) : null}
        <button onClick={() => setBulk({})} disabled={!canAct || !page.count?.count} title={canAct ? undefined : 'needs the operator role'}>
          Act on all {countText} matching…
        </button>
      </div>
      <p className="muted shortcuts" data-testid="shortcuts">
        Keys: {LIST_SHORTCUTS.map(([keys, what]) => <span key={keys}><kbd>{keys}</kbd> {what}</span>)}
      </p>
      <p role="status" className={isFull ? 'warning' : 'visually-hidden'}>
        {isFull ? `At most ${fmt(MAX_SELECTED)} rows can be ticked; act on all matching for more.` : ''}
      </p>
      <ErrorNote error={error} />
      {bulk ? (
        <BulkActions
          filter={filter}
          matching={page.count}
          selected={bulk.selected}
          onClose={(changed) => {
            setBulk(null);
            if (!changed) return;
            if (bulk.selected) selection.clear();
            void load(null);
          }}
        />
      ) : null}
      <div ref={scroller} className="grid-scroll" role="region" aria-label="Matching dead letters" tabIndex={0}>
        <table className="grid" aria-rowcount={rows.length}>
          <thead>
            {table.getHeaderGroups().map((g) => (
              <tr key={g.id}>
                {g.headers.map((h) => (
                  <th key={h.id} scope="col" style={{ width: h.getSize() }}>
                    {h.column.id === 'id' ? (
                      <>
                        <input
                          type="checkbox"
                          aria-label="Select all loaded rows"
                          checked={loaded.length > 0 && loadedSelected === loaded.length}
                          ref={(el) => { if (el) el.indeterminate = loadedSelected > 0 && loadedSelected < loaded.length; }}
                          onChange={(e) => setIsFull(!selection.setMany(loaded, e.target.checked))}
                        />{' '}
                      </>
                    ) : null}
                    {flexRender(h.column.columnDef.header, h.getContext())}
                  </th>
                ))}
              </tr>
            ))}
          </thead>
          <tbody style={{ height: virtual.getTotalSize(), position: 'relative' }}>
            {items.map((item) => {
              const row = table.getRowModel().rows[item.index]!;
              const isCursor = item.index === cursor;
              return (
                <tr
                  key={row.id}
                  data-testid="row"
                  aria-selected={selection.ids.has(row.id)}
                  aria-current={isCursor ? 'true' : undefined}
                  className={isCursor ? 'cursor' : undefined}
                  style={{ position: 'absolute', transform: `translateY(${item.start}px)`, height: item.size }}
                >
                  {row.getVisibleCells().map((cell) => (
                    <td key={cell.id} style={{ width: cell.column.getSize() }}>
                      {cell.column.id === 'id' ? (
                        <>
                          <input
                            type="checkbox"
                            aria-label={`Select event ${row.id}`}
                            checked={selection.ids.has(row.id)}
                            onChange={() => tick(row.id)}
                            onFocus={() => setCursor(item.index)}
                            ref={isCursor ? focusCheckbox : undefined}
                          />{' '}
                        </>
                      ) : null}
                      {flexRender(cell.column.columnDef.cell, cell.getContext())}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
        {!loading && rows.length === 0 ? <p className="muted empty">Nothing matches this filter.</p> : null}
      </div>
    </div>
  );
}

function FilterBar({ params, setParams, search }: { params: URLSearchParams; setParams: (p: URLSearchParams) => void; search: RefObject<HTMLInputElement | null> }) {
  const [draft, setDraft] = useState(() => Object.fromEntries(params));
  useEffect(() => setDraft(Object.fromEntries(params)), [params]);
  const field = (name: string, label: string, placeholder?: string) => (
    <label key={name}>
      {label}
      <input name={name} ref={name === 'q' ? search : undefined} value={draft[name] ?? ''} placeholder={placeholder} onChange={(e) => setDraft({ ...draft, [name]: e.target.value })} />
    </label>
  );
  const apply = (event: FormEvent) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of Object.entries(draft)) if (v) next.set(k, v);
    setParams(next);
  };
  const toggle = (name: 'status' | 'kind', value: string) => {
    const current = new Set((draft[name] ?? '').split(',').filter(Boolean));
    if (current.has(value)) current.delete(value);
    else current.add(value);
    setDraft({ ...draft, [name]: [...current].join(',') });
  };
  return (
    <form className="filters" onSubmit={apply} aria-label="Filter">
      <fieldset>
        <legend>Status</legend>
        {STATUSES.map((s) => (
          <label key={s} className="check">
            <input type="checkbox" checked={(draft.status ?? '').split(',').includes(s)} onChange={() => toggle('status', s)} /> {s.toLowerCase()}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Error kind</legend>
        {ERROR_KINDS.map((k) => (
          <label key={k} className="check">
            <input type="checkbox" checked={(draft.kind ?? '').split(',').includes(k)} onChange={() => toggle('kind', k)} /> {k.toLowerCase()}
          </label>
        ))}
      </fieldset>
      <div className="fields">
        {TEXT_FILTERS.map((f) => field(f.param, f.label, f.placeholder))}
        {field('path', 'Payload path', 'customer.id')}
        {field('equals', 'equals (JSON)', '"c-42"')}
        {field('from', 'Created from', '2026-11-24T00:00:00Z')}
        {field('to', 'Created before')}
        <label>
          Sort
          <select value={draft.order ?? 'CREATED_AT.DESC'} onChange={(e) => setDraft({ ...draft, order: e.target.value })}>
            {ORDERS.flatMap((o) => ['DESC', 'ASC'].map((d) => <option key={`${o}.${d}`} value={`${o}.${d}`}>{o.toLowerCase().replaceAll('_', ' ')} {d === 'DESC' ? '↓' : '↑'}</option>))}
          </select>
        </label>
      </div>
      <div className="actions">
        <button type="submit">Apply</button>
        <button type="button" onClick={() => setParams(new URLSearchParams())}>Clear</button>
      </div>
    </form>
  );
}
