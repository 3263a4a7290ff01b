// How many events' error texts contain `text`, counting no further than `cap`. On the side table
// alone, with no ORDER BY: a rare text is answered from its trigram indexes, and a common one
// stops after `cap` rows.
import { Prisma } from '../../generated/prisma/client.ts';
import { likeContains } from '../../domain/deadLetterFilter.ts';

export function errorTextProbeSql(text: string, cap: number): Prisma.Sql {
  const pattern = likeContains(text);
  return Prisma.sql`select count(*)::int as n from (
    select 1 from dead_letter_error_texts t where t.error_message ilike ${pattern} or t.error_stack ilike ${pattern} limit ${cap}) s`;
}
