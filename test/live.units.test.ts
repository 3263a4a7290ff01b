import { describe, expect, it } from 'vitest';
import { compareCursors, decodeCursor, encodeCursor } from '../src/live/changeCursor.ts';
import { backoffMs } from '../src/live/changeListener.ts';
import { parseHint } from '../src/live/parseHint.ts';

describe('change cursors', () => {
  it('round-trip through their opaque string form and order by xid, then change id', () => {
    const cursor = { xid: 18446744073709551615n, changeId: 9223372036854775807n };
    expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    expect(compareCursors({ xid: 5n, changeId: 9n }, { xid: 6n, changeId: 1n })).toBe(-1);
    expect(compareCursors({ xid: 6n, changeId: 2n }, { xid: 6n, changeId: 1n })).toBe(1);
  });

  it.each(['', 'x'.repeat(65), 'a+b/', Buffer.from('c1:01:1').toString('base64url'), Buffer.from('c1:18446744073709551616:1').toString('base64url'), Buffer.from('c1:1:9223372036854775808').toString('base64url')])(
    'rejects %j',
    (value) => expect(decodeCursor(value)).toBeNull(),
  );
});

describe('parseHint', () => {
  it('accepts the trigger payload', () => {
    expect(parseHint('{"t": "dead_letters", "op": "insert", "n": 2, "max": 41, "ids": [7, 8]}')).toEqual({ table: 'dead_letters', maxChangeId: 41n });
  });

  it.each(['', 'garbage', '[]', 'null', '{"t":"users","max":1}', '{"t":"dead_letters","max":"1"}', '{"t":"dead_letters","max":1.5}', '{"t":"dead_letters","max":-1}', 'x'.repeat(9000)])(
    'returns null for %j without throwing',
    (raw) => expect(parseHint(raw)).toBeNull(),
  );
});

describe('backoffMs', () => {
  it('grows exponentially with jitter and is capped', () => {
    expect(backoffMs(0, 30_000, 0)).toBe(125);
    expect(backoffMs(0, 30_000, 1)).toBe(250);
    expect(backoffMs(3, 30_000, 1)).toBe(2_000);
    expect(backoffMs(50, 30_000, 1)).toBe(30_000);
    expect(backoffMs(50, 30_000, 0)).toBe(15_000);
  });
});
