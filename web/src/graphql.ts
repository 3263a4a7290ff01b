import { initGraphQLTada } from 'gql.tada';
import type { introspection } from './graphql-env.d.ts';

// Operations are typed against schema.graphql (npm run schema writes graphql-env.d.ts from it).
export const graphql = initGraphQLTada<{
  introspection: introspection;
  scalars: { DateTime: string; JSON: unknown; ID: string };
}>();

export { readFragment } from 'gql.tada';
export type { FragmentOf, ResultOf, VariablesOf } from 'gql.tada';
