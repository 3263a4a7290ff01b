// How many events' error texts contain `text`, counting no further than `cap`. On the side table
// alone, with no ORDER BY: a rare text is answered from its trigram indexes, and a common one
// stops after `cap` rows.
import { Prisma } from '../../generated/prisma/client.ts';
import { errorTextsMatchingSql } from '../../domain/deadLetterFilter.ts';

export function errorTextProbeSql(text: string, cap: number): Prisma.Sql {
  return Prisma.sql`select count(*)::int as n from (${errorTextsMatchingSql(text)} limit ${cap}) s`;
}
