// Which large dead-letter columns a query can reach, so a page reads payload, headers and stacks
// only when asked. Conservative: any field of that name anywhere under the current field (through
// fragments too) counts, so a false "selected" costs bytes, never a wrong null.
import type { GraphQLResolveInfo, SelectionSetNode } from 'graphql';

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

/** Whether the current field's selection reaches `payload`, `headers` or an error `stack`. */
export function heavyColumnsSelected(info: GraphQLResolveInfo): { payload: boolean; headers: boolean; stack: boolean } {
  const names = new Set<string>();
  const seen = new Set<string>();
  for (const node of info.fieldNodes) collectNames(node.selectionSet, info, names, seen);
  return { payload: names.has('payload'), headers: names.has('headers'), stack: names.has('stack') };
}
