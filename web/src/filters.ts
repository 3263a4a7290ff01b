// Every filter lives in the URL, so a link pasted in an incident channel opens the same view.
import type { VariablesOf } from './graphql.ts';
import type { FailuresQuery } from './views/Failures.tsx';

export type DeadLetterFilter = NonNullable<VariablesOf<typeof FailuresQuery>['filter']>;
export type DeadLetterOrder = NonNullable<VariablesOf<typeof FailuresQuery>['orderBy']>;
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
  contains: 'payloadContains',
  path: 'payloadPath (dot-separated keys)',
  equals: 'payloadPath value (JSON)',
  from: 'created from (ISO time)',
  to: 'created before (ISO time)',
  group: 'groupId',
} as const;

const list = (p: URLSearchParams, name: string) => {
  const value = p.get(name);
  return value ? value.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
};

export function filterFromParams(p: URLSearchParams): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  const statuses = list(p, 'status');
  if (statuses) filter.statuses = statuses as Status[];
  const kinds = list(p, 'kind');
  if (kinds) filter.errorKinds = kinds as Kind[];
  const types = list(p, 'type');
  if (types) filter.eventTypes = types;
  const queues = list(p, 'queue');
  if (queues) filter.queues = queues;
  const sources = list(p, 'source');
  if (sources) filter.sources = sources;
  // A signature may hold commas, so it is one value.
  const signature = p.get('signature');
  if (signature) filter.errorSignatures = [signature];
  if (p.get('q')) filter.errorText = p.get('q');
  if (p.get('key')) filter.orderingKey = p.get('key');
  if (p.get('contains')) filter.payloadContains = p.get('contains');
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
