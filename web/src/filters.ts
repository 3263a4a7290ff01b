// Every filter lives in the URL, so a link pasted in an incident channel opens the same view.
import { graphql } from './graphql.ts';

// The API's own input types (from schema.graphql), not a view's query: views import this file.
export type DeadLetterFilter = ReturnType<typeof graphql.scalar<'DeadLetterFilter'>>;
export type DeadLetterOrder = ReturnType<typeof graphql.scalar<'DeadLetterOrder'>>;
type Status = NonNullable<DeadLetterFilter['statuses']>[number];
type Kind = NonNullable<DeadLetterFilter['errorKinds']>[number];

export const STATUSES: Status[] = ['PENDING', 'PROCESSING', 'EXHAUSTED', 'SUCCEEDED', 'RESOLVED', 'DISCARDED'];
export const ERROR_KINDS: Kind[] = ['TIMEOUT', 'DOWNSTREAM_API', 'VALIDATION', 'SCHEMA_MISMATCH', 'CRASH', 'UNKNOWN'];
export const ORDERS = ['CREATED_AT', 'UPDATED_AT', 'NEXT_ATTEMPT_AT', 'ATTEMPTS'] as const;

/** URL parameter → what it holds. Lists are comma-separated. */
export const FILTER_PARAMS = {
  status: 'statuses',
  type: 'eventTypes',
  queue: 'queues',
  source: 'sources',
  kind: 'errorKinds',
  q: 'errorText',
  signature: 'errorSignatures',
  key: 'orderingKey',
  dedupe: 'dedupeKeys (one key)',
  contains: 'payloadContains',
  path: 'payloadPath (dot-separated keys)',
  equals: 'payloadPath value (JSON)',
  from: 'created from (ISO time)',
  to: 'created before (ISO time)',
  group: 'groupId',
} as const;

const split = (value: string) => value.split(',').map((s) => s.trim()).filter(Boolean);

/**
 * The filter bar's plain text inputs, in order, and the filter field each URL parameter sets. A new
 * `DeadLetterFilter` field is a line here (and one in FILTER_PARAMS); `read` is typed by the schema
 * (graphql-env.d.ts), so a field the API does not have does not compile.
 */
export const TEXT_FILTERS: { param: keyof typeof FILTER_PARAMS; label: string; placeholder?: string; read: (value: string) => DeadLetterFilter }[] = [
  { param: 'q', label: 'Error text', placeholder: 'e.g. connection refused', read: (v) => ({ errorText: v }) },
  { param: 'type', label: 'Event types', placeholder: 'order.created, …', read: (v) => ({ eventTypes: split(v) }) },
  { param: 'queue', label: 'Queues', read: (v) => ({ queues: split(v) }) },
  { param: 'source', label: 'Sources', read: (v) => ({ sources: split(v) }) },
  // A signature may hold commas, so it is one value.
  { param: 'signature', label: 'Error signature', read: (v) => ({ errorSignatures: [v] }) },
  { param: 'key', label: 'Ordering key', read: (v) => ({ orderingKey: v }) },
  { param: 'dedupe', label: 'Dedupe key', read: (v) => ({ dedupeKeys: [v] }) },
  { param: 'contains', label: 'Payload contains', placeholder: '{"customer":{"tier":"gold"}}', read: (v) => ({ payloadContains: v }) },
];

export function filterFromParams(p: URLSearchParams): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  const statuses = p.get('status');
  if (statuses) filter.statuses = split(statuses) as Status[];
  const kinds = p.get('kind');
  if (kinds) filter.errorKinds = split(kinds) as Kind[];
  for (const { param, read } of TEXT_FILTERS) {
    const value = p.get(param);
    if (value) Object.assign(filter, read(value));
  }
  if (p.get('path') && p.get('equals') !== null) filter.payloadPath = { path: p.get('path')!.split('.'), equals: p.get('equals')! };
  const from = p.get('from');
  const to = p.get('to');
  if (from || to) filter.createdAt = { from: from || undefined, to: to || undefined };
  if (p.get('group')) filter.groupId = p.get('group');
  return filter;
}

export function orderFromParams(p: URLSearchParams): DeadLetterOrder {
  const [field, direction] = (p.get('order') ?? 'CREATED_AT.DESC').split('.');
  return {
    field: (ORDERS as readonly string[]).includes(field ?? '') ? (field as DeadLetterOrder['field']) : 'CREATED_AT',
    direction: direction === 'ASC' ? 'ASC' : 'DESC',
  };
}

/** The same filter as URL parameters, for links from one view to another. */
export function paramsOf(values: Partial<Record<keyof typeof FILTER_PARAMS, string>>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v) p.set(k, v);
  return p.toString();
}
