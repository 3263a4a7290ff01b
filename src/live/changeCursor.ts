// A change cursor is (change_xid, change_id): the writing transaction's xid8, then the global
// change sequence. Clients see it as an opaque string and hand it back to resume.

export interface ChangeCursor {
  xid: bigint;
  changeId: bigint;
}

const PREFIX = 'c1:';
const MAX_XID8 = (1n << 64n) - 1n;
const MAX_BIGINT = (1n << 63n) - 1n;

export function encodeCursor(cursor: ChangeCursor): string {
  return Buffer.from(`${PREFIX}${cursor.xid}:${cursor.changeId}`).toString('base64url');
}

/** Decodes a client's cursor; null when it is not one we issued (shape or range). */
export function decodeCursor(value: string): ChangeCursor | null {
  if (value.length > 64 || !/^[A-Za-z0-9_-]+$/.test(value)) return null;
  const match = /^c1:(0|[1-9]\d{0,19}):(0|[1-9]\d{0,18})$/.exec(Buffer.from(value, 'base64url').toString());
  if (!match) return null;
  const xid = BigInt(match[1]!);
  const changeId = BigInt(match[2]!);
  if (xid > MAX_XID8 || changeId > MAX_BIGINT) return null;
  return { xid, changeId };
}

export function compareCursors(a: ChangeCursor, b: ChangeCursor): number {
  if (a.xid !== b.xid) return a.xid < b.xid ? -1 : 1;
  if (a.changeId !== b.changeId) return a.changeId < b.changeId ? -1 : 1;
  return 0;
}
