import { createSchema, createYoga } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../src/api/auth/principal.ts';
import type { GraphQLContext } from '../src/api/schema/builder.ts';
import { useMutationRateLimit } from '../src/api/rateLimit.ts';
import { useTestDatabase } from './helpers/db.ts';

const t = useTestDatabase();

// Mid-window, so a run that straddles a real minute boundary cannot split the count.
const NOW = new Date('2026-11-21T12:00:30Z');

// A stand-in schema with one mutation: the limiter only looks at the operation type and principal.
function instance(limit: number, principalFor: (request: Request) => Principal | null) {
  return createYoga<Record<string, never>, GraphQLContext>({
    schema: createSchema({
      typeDefs: 'type Query { ping: Int! } type Mutation { touch: Int! }',
      resolvers: { Query: { ping: () => 1 }, Mutation: { touch: () => 1 } },
    }),
    context: ({ request }) => ({ db: t.db, principal: principalFor(request) }),
    plugins: [useMutationRateLimit(limit, { now: () => NOW })],
  });
}

const byHeader = (request: Request): Principal => ({ name: request.headers.get('x-principal') ?? 'anon', role: 'operator' });

async function send(server: ReturnType<typeof instance>, query: string, principal = 'alice') {
  const response = await server.fetch('http://lazarus/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-principal': principal },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

describe('mutation rate limit', () => {
  it('refuses the mutation past the limit with 429 RATE_LIMITED, counting across instances', async () => {
    const a = instance(3, byHeader);
    const b = instance(3, byHeader);

    const results = [await send(a, 'mutation { touch }'), await send(b, 'mutation { touch }'), await send(a, 'mutation { touch }')];
    const fourth = await send(b, 'mutation { touch }');

    expect(results.map((r) => r.body)).toEqual(Array(3).fill({ data: { touch: 1 } }));
    expect(fourth.status).toBe(429);
    expect(fourth.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
    expect(fourth.retryAfter).toBe('30');
    expect(fourth.body.data ?? null).toBeNull();
  });

  it('counts each principal separately and never limits queries', async () => {
    const server = instance(1, byHeader);

    await send(server, 'mutation { touch }', 'alice');
    const bob = await send(server, 'mutation { touch }', 'bob');
    const aliceQuery = await send(server, '{ ping }', 'alice');
    const aliceAgain = await send(server, 'mutation { touch }', 'alice');

    expect(bob.body).toEqual({ data: { touch: 1 } });
    expect(aliceQuery.body).toEqual({ data: { ping: 1 } });
    expect(aliceAgain.status).toBe(429);
    const rows = await t.db.rateLimitWindow.findMany({ orderBy: { principal: 'asc' } });
    expect(rows.map((r) => [r.principal, r.count])).toEqual([['alice', 2], ['bob', 1]]);
  });

  it('starts a fresh count in the next minute and deletes windows that have passed', async () => {
    const at = { now: NOW };
    const server = createYoga<Record<string, never>, GraphQLContext>({
      schema: createSchema({ typeDefs: 'type Query { ping: Int! } type Mutation { touch: Int! }', resolvers: { Mutation: { touch: () => 1 } } }),
      context: ({ request }) => ({ db: t.db, principal: byHeader(request) }),
      plugins: [useMutationRateLimit(1, { now: () => at.now })],
    });

    expect((await send(server, 'mutation { touch }')).status).toBe(200);
    expect((await send(server, 'mutation { touch }')).status).toBe(429);
    at.now = new Date('2026-11-21T12:01:05Z');
    expect((await send(server, 'mutation { touch }')).status).toBe(200);
    at.now = new Date('2026-11-21T12:05:00Z');
    await send(server, 'mutation { touch }');

    const windows = await t.db.rateLimitWindow.findMany({ orderBy: { windowStart: 'asc' } });
    expect(windows.map((w) => [w.windowStart.toISOString(), w.count])).toEqual([['2026-11-21T12:05:00.000Z', 1]]);
  });

  it('is off when the limit is 0', async () => {
    const server = instance(0, byHeader);
    for (let i = 0; i < 5; i++) expect((await send(server, 'mutation { touch }')).status).toBe(200);
    expect(await t.db.rateLimitWindow.count()).toBe(0);
  });
});
