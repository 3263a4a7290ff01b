// The do-it-yourself rival of issue #3 for bench/read.ts: PostGraphile 5 (amber preset) with
// postgraphile-plugin-connection-filter, pointed at the bench database's `rival` schema (one wide table, see rivalTable in bench/read.ts). Requests
// go through grafserv's WHATWG adaptor, an @whatwg-node/server adapter like Yoga, so both servers
// are timed from the same `fetch(Request)` call in this process: body parse, parse/validate (both
// cache documents), plan/execute, JSON response. A benchmark dev dependency only; the service never
// imports it.
import type { Pool } from 'pg';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/whatwg-node__server/v4';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { pgSmartTags } from 'postgraphile/utils';
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter';

export interface PostGraphileRival {
  fetch(url: string, init: RequestInit): Promise<Response>;
  release(): Promise<void>;
}

// PostGraphile 5 offers no filter on a column without an index of its own (error_message and
// error_stack: their trigram indexes are on Lazarus's side table) nor on jsonb (no natural
// equality). Someone building this by hand opts those three columns in, which is what we do.
const FILTERABLE = ['dead_letters.error_message', 'dead_letters.error_stack', 'dead_letters.payload'];

/** Builds the schema by introspecting the database behind `pool` (the caller owns and ends the pool). */
export async function createPostGraphileRival(pool: Pool): Promise<PostGraphileRival> {
  const pgl = postgraphile({
    extends: [PostGraphileAmberPreset, PostGraphileConnectionFilterPreset],
    plugins: [pgSmartTags(FILTERABLE.map((match) => ({ kind: 'attribute', match, tags: { behavior: '+attribute:filterBy' } })))],
    pgServices: [makePgService({ pool, schemas: ['rival'], pubsub: false })],
    grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false },
    grafast: { explain: false },
  });
  await pgl.getSchema();
  const serv = pgl.createServ(grafserv);
  const handler = serv.createHandler();
  return {
    fetch: async (url, init) => handler.fetch(url, init),
    release: async () => pgl.release(), // releases the grafserv instance too
  };
}
