import { useReactTable, getCoreRowModel, flexRender, type ColumnDef } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useLiveStream } from '../api.ts';
import { ERROR_KINDS, filterFromParams, ORDERS, orderFromParams, STATUSES, type DeadLetterFilter } from '../filters.ts';
import { graphql, type ResultOf } from '../graphql.ts';
import { ago, ErrorNote, fmt, StatusBadge, useCan, useSession } from '../ui.tsx';
import { BulkActions } from './BulkActions.tsx';

export const FailuresQuery = graphql(`
  query Failures($filter: DeadLetterFilter, $orderBy: DeadLetterOrder, $first: Int, $after: String) {
    deadLetters(filter: $filter, orderBy: $orderBy, first: $first, after: $after) {
      boundedCount(limit: 10000) { count exact }
      pageInfo { hasNextPage endCursor }
      edges { node { id status eventType queue source attempts createdAt updatedAt nextAttemptAt error { kind message } } }
    }
  }
`);

const FailuresChanged = graphql(`
  subscription FailuresChanged($filter: DeadLetterFilter, $after: String) {
    deadLetterChanged(filter: $filter, after: $after) {
      cursor isNew deleted deadLetterId
      deadLetter { id status eventType queue source attempts createdAt updatedAt nextAttemptAt error { kind message } }
    }
  }
`);

type Row = ResultOf<typeof FailuresQuery>['deadLetters']['edges'][number]['node'];
const PAGE = 100;

const columns: ColumnDef<Row>[] = [
  { header: 'Id', accessorKey: 'id', cell: (c) => <Link to={`/failures/${c.row.original.id}`}>{c.row.original.id}</Link>, size: 90 },
  { header: 'Status', accessorKey: 'status', cell: (c) => <StatusBadge status={c.row.original.status} />, size: 120 },
  { header: 'Event type', accessorKey: 'eventType', size: 170 },
  { header: 'Queue', accessorKey: 'queue', size: 120 },
  { header: 'Error', accessorFn: (r) => `${r.error.kind}: ${r.error.message}`, cell: (c) => <span className="ellipsis" title={c.row.original.error.message}><span className="kind">{c.row.original.error.kind}</span> {c.row.original.error.message}</span>, size: 420 },
  { header: 'Attempts', accessorKey: 'attempts', size: 80 },
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
  const [bulkOpen, setBulkOpen] = useState(false);
  const canAct = useCan('OPERATOR');

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
  const virtual = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => 36, overscan: 12 });
  const items = virtual.getVirtualItems();
  // Near the bottom, the next page loads (keyset: after the last cursor).
  const lastItem = items[items.length - 1];
  useEffect(() => {
    if (lastItem && lastItem.index >= rows.length - 20 && page.hasNextPage && !loading) void load(page.endCursor);
  }, [lastItem, rows.length, page, loading, load]);

  const countText = page.count ? `${fmt(page.count.count)}${page.count.exact ? '' : '+'}` : '…';
  return (
    <div className="failures">
      {heading ? <h2>{heading}</h2> : <h1>Failures</h1>}
      <FilterBar params={params} setParams={setParams} />
      <div className="toolbar">
        <span data-testid="matching">{countText} matching</span>
        {fresh > 0 ? (
          <button className="pill" onClick={() => void load(null)} data-testid="new-pill">{fmt(fresh)} new — show</button>
        ) : null}
        <span className="spacer" />
        <button onClick={() => setBulkOpen(true)} disabled={!canAct || !page.count?.count} title={canAct ? undefined : 'needs the operator role'}>
          Act on all {countText} matching…
        </button>
      </div>
      <ErrorNote error={error} />
      {bulkOpen ? <BulkActions filter={filter} matching={page.count} onClose={(changed) => { setBulkOpen(false); if (changed) void load(null); }} /> : null}
      <div ref={scroller} className="grid-scroll" role="region" aria-label="Matching dead letters" tabIndex={0}>
        <table className="grid" aria-rowcount={rows.length}>
          <thead>
            {table.getHeaderGroups().map((g) => (
              <tr key={g.id}>
                {g.headers.map((h) => (
                  <th key={h.id} scope="col" style={{ width: h.getSize() }}>{flexRender(h.column.columnDef.header, h.getContext())}</th>
                ))}
              </tr>
            ))}
          </thead>
          <tbody style={{ height: virtual.getTotalSize(), position: 'relative' }}>
            {items.map((item) => {
              const row = table.getRowModel().rows[item.index]!;
              return (
                <tr key={row.id} data-testid="row" style={{ position: 'absolute', transform: `translateY(${item.start}px)`, height: item.size }}>
                  {row.getVisibleCells().map((cell) => (
                    <td key={cell.id} style={{ width: cell.column.getSize() }}>{flexRender(cell.column.columnDef.cell, cell.getContext())}</td>
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

function FilterBar({ params, setParams }: { params: URLSearchParams; setParams: (p: URLSearchParams) => void }) {
  const [draft, setDraft] = useState(() => Object.fromEntries(params));
  useEffect(() => setDraft(Object.fromEntries(params)), [params]);
  const field = (name: string, label: string, placeholder?: string) => (
    <label>
      {label}
      <input name={name} value={draft[name] ?? ''} placeholder={placeholder} onChange={(e) => setDraft({ ...draft, [name]: e.target.value })} />
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
        {field('q', 'Error text', 'e.g. connection refused')}
        {field('type', 'Event types', 'order.created, …')}
        {field('queue', 'Queues')}
        {field('source', 'Sources')}
        {field('signature', 'Error signature')}
        {field('key', 'Ordering key')}
        {field('contains', 'Payload contains', '{"customer":{"tier":"gold"}}')}
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
