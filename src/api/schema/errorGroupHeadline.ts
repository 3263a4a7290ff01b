import DataLoader from 'dataloader';
import { readErrorHeadlines } from '../../reads/errorGroups.ts';
import { builder, type GraphQLContext } from './builder.ts';
import { ErrorGroupRef } from './errorGroup.ts';

// A page of groups asks for each sample's headline in one pass of the executor: one statement per request.
const loaders = new WeakMap<GraphQLContext, DataLoader<bigint, string | null>>();
function headlineOf(ctx: GraphQLContext, id: bigint): Promise<string | null> {
  let loader = loaders.get(ctx);
  if (!loader) {
    loader = new DataLoader<bigint, string | null>(async (ids) => {
      const byId = await readErrorHeadlines(ctx.db, [...new Set(ids)]);
      return ids.map((id) => byId.get(id) ?? null);
    }, { cache: false });
    loaders.set(ctx, loader);
  }
  return loader.load(id);
}

builder.objectFields(ErrorGroupRef, (t) => ({
  sampleHeadline: t.string({
    nullable: true,
    description: 'One line to read under the message in a list: the first (innermost) frame of its first event’s stored stack, as stored (line numbers kept, at most 200 characters), or without a recognisable frame the first line of that event’s message; null once that event is purged.',
    resolve: (g, _args, ctx) => (g.sampleDeadLetterId === null ? null : headlineOf(ctx, g.sampleDeadLetterId)),
  }),
}));
