import { Prisma } from '../../generated/prisma/client.ts';

/**
 * One of our own integers (a page or batch size), never a client's text, written into a statement
 * as text instead of bound: `what` names it in the error when it is not a whole number >= `min`.
 * Why each caller wants text rather than a parameter is said where it calls this.
 */
export function integerLiteral(n: number, min: number, what: string): Prisma.Sql {
  if (!Number.isSafeInteger(n) || n < min) throw new RangeError(`${what} must be a whole number of at least ${min}, got ${n}`);
  return Prisma.raw(String(n));
}
