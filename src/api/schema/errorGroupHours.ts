import DataLoader from 'dataloader';
import { readErrorGroupHours, type HourCount } from '../../reads/errorGroups.ts';
import type { GraphQLContext } from './builder.ts';

// A page of groups asks for each one's sparkline in one pass of the executor: one statement per
// request and window (50 statements made a 10,000-group first page ~3x slower).
const hourLoaders = new WeakMap<GraphQLContext, Map<number, DataLoader<bigint, HourCount[]>>>();
/** One group's hourly counts for the last `hours` hours, batched with the rest of the request's. */
export function hoursOf(ctx: GraphQLContext, groupId: bigint, hours: number): Promise<HourCount[]> {
  let byWindow = hourLoaders.get(ctx);
  if (!byWindow) hourLoaders.set(ctx, (byWindow = new Map()));
  let loader = byWindow.get(hours);
  if (!loader) {
    const now = new Date();
    loader = new DataLoader<bigint, HourCount[]>(async (ids) => {
      const byGroup = await readErrorGroupHours(ctx.db, [...new Set(ids)], hours, now);
      return ids.map((id) => byGroup.get(id) ?? []);
    }, { cache: false });
    byWindow.set(hours, loader);
  }
  return loader.load(groupId);
}
