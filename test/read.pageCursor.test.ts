import { describe, expect, it } from 'vitest';
import { decodePageCursor, encodePageCursor, PageArgumentError } from '../src/reads/pageCursor.ts';

const COUNT_KEY = /^[0-9]{1,19}$/;

describe('the page cursor', () => {
  it('names the row it was made from, under the same order', () => {
    const cursor = encodePageCursor(['COUNT'], { sortKey: '42', id: 7n });
    expect(decodePageCursor(cursor, ['COUNT'], COUNT_KEY, 'after')).toEqual({ key: '42', id: 7n });
  });

  it('keeps the format cursors already given out have: base64url JSON of the order, the key and the id', () => {
    const cursor = encodePageCursor(['CREATED_AT', 'DESC'], { sortKey: '2026-01-02 03:04:05.678+00', id: 12n });
    expect(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))).toEqual(['CREATED_AT', 'DESC', '2026-01-02 03:04:05.678+00', '12']);
  });

  it.each([
    ['another order', encodePageCursor(['LAST_SEEN'], { sortKey: '42', id: 7n })],
    ['another direction', encodePageCursor(['COUNT', 'ASC'], { sortKey: '42', id: 7n })],
    ['a key of another type', encodePageCursor(['COUNT'], { sortKey: '2026-01-02 03:04:05+00', id: 7n })],
    ['an id that is not a positive integer', Buffer.from(JSON.stringify(['COUNT', '42', '0'])).toString('base64url')],
    ['text that is not a cursor', 'not a cursor'],
  ])('refuses a cursor of %s as a page argument, naming the argument', (_what, cursor) => {
    expect(() => decodePageCursor(cursor, ['COUNT'], COUNT_KEY, 'before')).toThrow(
      expect.objectContaining({ constructor: PageArgumentError, argument: 'before', message: 'before is not a cursor of this ordering' }),
    );
  });
});
