// Which dead-letter columns a query can reach, so a page reads only those. Conservative: any field
// of a listed name anywhere under the current field (through fragments too) counts, so a false
// "selected" costs bytes, never a missing value.
import type { GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import type { DeadLetterColumn } from '../../reads/deadLetterPages.ts';

/**
 * The columns behind each field of `DeadLetter` (and `stack` of its `DeadLetterError`). Fields
 * resolved from the id alone list none. Every field of the type must be here: a test checks it.
 */
export const DEAD_LETTER_FIELD_COLUMNS: Record<string, readonly DeadLetterColumn[]> = {
  id: [],
  eventType: ['eventType'],
  queue: ['queue'],
  source: ['source'],
  orderingKey: ['orderingKey'],
  orderingSeq: ['orderingSeq'],
  dedupeKey: ['dedupeKey'],
  payload: ['payload'],
  headers: ['headers'],
  origin: ['origin'],
  error: ['errorKind', 'errorMessage'],
  stack: ['errorStack'],
  errorSignature: ['errorSignature'],
  errorGroupId: ['errorGroupId'],
  status: ['status'],
  attempts: ['attempts'],
  maxAttemptsOverride: ['maxAttempts'],
  nextAttemptAt: ['nextAttemptAt'],
  leaseExpiresAt: ['leaseExpiresAt'],
  resolvedAt: ['resolvedAt'],
  resolvedBy: ['resolvedBy'],
  resolutionReason: ['resolutionReason'],
  occurredAt: ['occurredAt'],
  createdAt: ['createdAt'],
  updatedAt: ['updatedAt'],
  version: ['version'],
  deliveryAttempts: [],
  history: [],
  timeline: [],
  held: [],
};

function collectNames(set: SelectionSetNode | undefined, info: GraphQLResolveInfo, names: Set<string>, seen: Set<string>): void {
  if (!set) return;
  for (const sel of set.selections) {
    if (sel.kind === 'Field') {
      names.add(sel.name.value);
      collectNames(sel.selectionSet, info, names, seen);
    } else if (sel.kind === 'InlineFragment') {
      collectNames(sel.selectionSet, info, names, seen);
    } else if (!seen.has(sel.name.value)) {
      seen.add(sel.name.value);
      collectNames(info.fragments[sel.name.value]?.selectionSet, info, names, seen);
    }
  }
}

/** The dead-letter columns the current field's selection can reach. */
export function deadLetterColumnsSelected(info: GraphQLResolveInfo): Set<DeadLetterColumn> {
  const names = new Set<string>();
  const seen = new Set<string>();
  for (const node of info.fieldNodes) collectNames(node.selectionSet, info, names, seen);
  const columns = new Set<DeadLetterColumn>();
  for (const name of names) {
    if (Object.hasOwn(DEAD_LETTER_FIELD_COLUMNS, name)) for (const column of DEAD_LETTER_FIELD_COLUMNS[name]!) columns.add(column);
  }
  return columns;
}
