import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import { createGraphQLError } from 'graphql-yoga';
import { GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { DateTimeResolver, JSONResolver } from 'graphql-scalars';
import { hasRole, type Principal } from '../auth/principal.ts';
import type { Db } from '../../reads/db.ts';
import { numberKeptExact } from '../../reads/exactJson.ts';
import type { WriteConfig } from '../../domain/writeConfig.ts';
import type { LiveFeed } from '../../live/liveEvents.ts';
import type { BridgeBoard } from '../../workers/bridges/bridgeBoard.ts';
import type PrismaTypes from '../../generated/pothosTypes.ts';
import { getDatamodel } from '../../generated/pothosTypes.ts';

export interface GraphQLContext {
  db: Db;
  /** The authenticated caller; null when the request carried no valid credentials. */
  principal: Principal | null;
  /** Write-side settings (allowed event types, redrive threshold); defaults when absent. */
  writeConfig?: WriteConfig;
  /** The change feed subscriptions read from; absent where no feed runs. */
  live?: LiveFeed;
  /** The broker bridges this instance runs; absent (none) outside the service. */
  bridges?: BridgeBoard;
  /** Event types an in-process handler delivers: never held for want of a target. */
  inProcessEventTypes?: readonly string[];
}

export const builder = new SchemaBuilder<{
  PrismaTypes: PrismaTypes;
  Context: GraphQLContext;
  AuthScopes: { viewer: boolean; operator: boolean; admin: boolean };
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  // scope-auth goes first and plugin-errors before plugin-prisma (Pothos docs).
  plugins: [ScopeAuthPlugin, ErrorsPlugin, PrismaPlugin, RelayPlugin],
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      viewer: hasRole(ctx.principal, 'viewer'),
      operator: hasRole(ctx.principal, 'operator'),
      admin: hasRole(ctx.principal, 'admin'),
    }),
    unauthorizedError: (_parent, ctx) =>
      ctx.principal
        ? createGraphQLError('this operation needs a role you do not have', { extensions: { code: 'FORBIDDEN' } })
        : createGraphQLError('missing or invalid API key', { extensions: { code: 'UNAUTHENTICATED' } }),
  },
  defaultFieldNullability: false,
  prisma: {
    // The client comes from the request context, so a test can point a server at its own database.
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // ids are plain decimal strings, not Relay global ids, so no node/nodes root fields.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
  errors: { defaultTypes: [] },
});

// Dates go out as ISO strings, as JSON.stringify would write them. graphql-scalars serialises to
// the Date itself, and an object with toJSON in a result moves V8's JSON.stringify off its fast
// path: a 50-row page with one DateTime field took 53 us to stringify instead of 15.
const DateTimeAsString = new GraphQLScalarType({
  ...DateTimeResolver.toConfig(),
  serialize: (value) => (DateTimeResolver.serialize(value) as Date).toISOString(),
});
builder.addScalarType('DateTime', DateTimeAsString);
// JSON literals keep each number a double cannot carry as its text (12345678901234567890 would
// otherwise become 12345678901234567000), as JSON variables do (api/exactJsonBody.ts).
const JSONKeepingNumbers = new GraphQLScalarType({ ...JSONResolver.toConfig(), parseLiteral: jsonLiteral });
builder.addScalarType('JSON', JSONKeepingNumbers);

function jsonLiteral(ast: ValueNode, variables?: { readonly [name: string]: unknown } | null): unknown {
  switch (ast.kind) {
    case Kind.INT:
    case Kind.FLOAT:
      return numberKeptExact(ast.value);
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, jsonLiteral(f.value, variables)]));
    case Kind.LIST:
      return ast.values.map((v) => jsonLiteral(v, variables));
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
    case Kind.NULL:
      return null;
    default:
      return ast.value;
  }
}
// Deny by default: every query needs at least the viewer role.
builder.queryType({ authScopes: { viewer: true } });
// Every mutation needs at least the operator role; fields may ask for more.
builder.mutationType({ authScopes: { operator: true } });
