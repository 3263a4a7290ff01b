import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import { builder } from './builder.ts';
import './deadLetter.ts';
import './writeErrors.ts';
import './recordDeadLetter.ts';
import './operatorMutations.ts';
import './deadLetterConnection.ts';
import './deadLetterHistory.ts';
import './deadLetterStats.ts';
import './errorGroup.ts';
import './errorGroupActions.ts';
import './errorGroupChanged.ts';
import './subscriptions.ts';
import './retryPolicy.ts';
import './transform.ts';
import './alertRule.ts';
import './alert.ts';
import './viewer.ts';

export const schema: GraphQLSchema = builder.toSchema();

/** The SDL committed as schema.graphql. */
export function printSchemaSdl(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
