import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import { builder } from './builder.ts';
import './deadLetter.ts';
import './writeErrors.ts';
import './recordDeadLetter.ts';
import './operatorMutations.ts';
import './deadLetterConnection.ts';
import './deadLetterHistory.ts';
import './heldEvents.ts';
import './deadLetterStats.ts';
import './deliveryStats.ts';
import './errorGroup.ts';
import './errorGroupHeadline.ts';
import './errorGroupActions.ts';
import './errorGroupChanged.ts';
import './subscriptions.ts';
import './retryPolicy.ts';
import './policyRelease.ts';
import './retryTargetHealth.ts';
import './transform.ts';
import './alertRule.ts';
import './alert.ts';
import './viewer.ts';
import './bridge.ts';
import './sourceRedirect.ts';

export const schema: GraphQLSchema = builder.toSchema();

/** The SDL committed as schema.graphql. */
export function printSchemaSdl(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
