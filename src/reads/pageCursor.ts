// The one page cursor of every keyset connection (not the change feed's cursor): base64url JSON
// [...order, sort key as PostgreSQL text, id]. Opaque to clients, and tied to its order so a cursor
// from another order is refused, not misread.

/** A paging argument the caller can fix (bad cursor, size out of range); the API answers BAD_USER_INPUT. */
export class PageArgumentError extends Error {
  readonly argument: string;
  constructor(message: string, details: { argument: string }) {
    super(message);
    this.argument = details.argument;
  }
}

/** A position in a keyset order: the row's sort key (as PostgreSQL prints it) and its id. */
export interface PageCursor {
  key: string;
  id: bigint;
}

/** `order` names the ordering (field, and direction where it has one). */
export function encodePageCursor(order: readonly string[], row: { sortKey: string; id: bigint }): string {
  return Buffer.from(JSON.stringify([...order, row.sortKey, row.id.toString()])).toString('base64url');
}

/**
 * The position a cursor of `order` names. A cursor of another order, or a key that does not match
 * `keyPattern` (the sort key's type as text), is a PageArgumentError for `argument`.
 */
export function decodePageCursor(cursor: string, order: readonly string[], keyPattern: RegExp, argument: string): PageCursor {
  const bad = () => new PageArgumentError(`${argument} is not a cursor of this ordering`, { argument });
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== order.length + 2 || order.some((part, i) => parsed[i] !== part)) throw bad();
  const [key, id] = parsed.slice(order.length) as unknown[];
  if (typeof key !== 'string' || key.length > 100 || typeof id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(id)) throw bad();
  if (!keyPattern.test(key)) throw bad();
  return { key, id: BigInt(id) };
}
