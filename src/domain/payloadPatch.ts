// Patch documents for payload transforms: a JSON Patch (RFC 6902, applied by `rfc6902`) or a JSON
// Merge Patch (RFC 7396, applied by `json-merge-patch`), checked once up front, then applied to
// one payload at a time. Pure: no database, no clock.
import { isDeepStrictEqual } from 'node:util';
import mergePatchLib from 'json-merge-patch';
import { applyPatch, type Operation } from 'rfc6902';
import { ValidationError } from './errors.ts';

export const MAX_PATCH_OPERATIONS = 1000;
const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);
// Both libraries refuse to walk into these names, silently: rfc6902 turns `add /__proto__` into a
// no-op reported as success, and json-merge-patch stops applying the rest of the patch. So a patch
// that names them is refused up front instead of half-applied.
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export type PayloadPatch =
  | { kind: 'JSON_PATCH'; operations: Operation[] }
  | { kind: 'MERGE_PATCH'; document: unknown };

/** The patch document is malformed; `index` is the operation at fault (JSON Patch), else null. */
export class InvalidPatchError extends ValidationError {
  override name = 'InvalidPatchError';
}

/** Checks one of `patch` (an RFC 6902 operation list) or `mergePatch` (any JSON value, RFC 7396). */
export function parsePayloadPatch(input: { patch?: unknown; mergePatch?: unknown }): PayloadPatch {
  const hasPatch = input.patch !== undefined && input.patch !== null;
  const hasMerge = input.mergePatch !== undefined && input.mergePatch !== null;
  if (hasPatch === hasMerge) throw new InvalidPatchError(hasPatch ? 'mergePatch' : 'patch', 'give exactly one of patch or mergePatch');
  if (hasMerge) {
    const unsafe = findUnsafeKey(input.mergePatch, '');
    if (unsafe !== null) throw new InvalidPatchError('mergePatch', `the key at ${unsafe} is not supported (__proto__, constructor and prototype are refused)`);
    return { kind: 'MERGE_PATCH', document: input.mergePatch };
  }
  if (!Array.isArray(input.patch)) throw new InvalidPatchError('patch', 'must be a list of operations (RFC 6902)');
  if (input.patch.length === 0) throw new InvalidPatchError('patch', 'must hold at least one operation');
  if (input.patch.length > MAX_PATCH_OPERATIONS) throw new InvalidPatchError('patch', `must hold at most ${MAX_PATCH_OPERATIONS} operations`);
  return { kind: 'JSON_PATCH', operations: input.patch.map((op: unknown, i) => checkOperation(op, i)) };
}

function checkOperation(op: unknown, index: number): Operation {
  const fail = (message: string) => new InvalidPatchError('patch', `operation ${index}: ${message}`, index);
  if (op === null || typeof op !== 'object' || Array.isArray(op)) throw fail('must be an object');
  const o = op as Record<string, unknown>;
  if (typeof o.op !== 'string' || !OPS.has(o.op)) throw fail('"op" must be one of add, remove, replace, move, copy, test');
  checkPointer(o.path, 'path', fail);
  if (o.op === 'move' || o.op === 'copy') checkPointer(o.from, 'from', fail);
  if ((o.op === 'add' || o.op === 'replace' || o.op === 'test') && !('value' in o)) throw fail(`"${o.op}" needs a "value"`);
  if (o.op === 'move' && typeof o.from === 'string' && (o.path as string).startsWith(`${o.from}/`)) throw fail('cannot move a value into one of its own children');
  return o as unknown as Operation;
}

function checkPointer(pointer: unknown, name: string, fail: (m: string) => Error): void {
  if (typeof pointer !== 'string') throw fail(`"${name}" must be a JSON Pointer string`);
  if (pointer !== '' && !pointer.startsWith('/')) throw fail(`"${name}" must be "" or start with "/" (RFC 6901)`);
  if (/~(?![01])/.test(pointer)) throw fail(`"${name}" has a "~" not followed by 0 or 1 (RFC 6901)`);
  for (const token of pointer.split('/').slice(1)) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (UNSAFE_KEYS.has(key)) throw fail(`"${name}" names "${key}", which is not supported`);
  }
}

function findUnsafeKey(value: unknown, at: string): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  for (const [key, child] of Object.entries(value)) {
    const here = `${at}/${key}`;
    if (UNSAFE_KEYS.has(key)) return here;
    const deeper = findUnsafeKey(child, here);
    if (deeper !== null) return deeper;
  }
  return null;
}

export type PatchOutcome =
  | { kind: 'changed'; before: unknown; after: unknown; afterJson: string }
  | { kind: 'unchanged' }
  | { kind: 'failed'; reason: string };

/**
 * Applies the patch to one stored payload, given as PostgreSQL's `payload::text`. A payload with a
 * number that a JavaScript double cannot carry exactly (more than 15 significant digits) fails
 * instead of being rewritten with a rounded value.
 */
export function applyPayloadPatch(patch: PayloadPatch, payloadText: string): PatchOutcome {
  const parsed = parseExactly(payloadText);
  if (!parsed.ok) return { kind: 'failed', reason: `payload holds a number JavaScript cannot carry exactly (at ${parsed.at})` };
  const before = parsed.value;
  let after: unknown;
  if (patch.kind === 'MERGE_PATCH') {
    try {
      after = mergePatchLib.apply(structuredClone(before), structuredClone(patch.document));
    } catch (error) {
      return { kind: 'failed', reason: `merge patch could not be applied: ${error instanceof Error ? error.message : String(error)}` };
    }
  } else {
    // rfc6902 patches in place and keeps going after a failed operation; the first failure decides.
    const box = { root: structuredClone(before) };
    const results = applyPatch(box, patch.operations.map((op) => prefixed(op)));
    const failedAt = results.findIndex((r) => r !== null);
    if (failedAt >= 0) return { kind: 'failed', reason: describeFailure(patch.operations[failedAt]!, failedAt, results[failedAt]!) };
    after = box.root;
  }
  if (after === undefined) return { kind: 'failed', reason: 'the patch removed the whole payload' };
  if (isDeepStrictEqual(before, after)) return { kind: 'unchanged' };
  return { kind: 'changed', before, after, afterJson: JSON.stringify(after) };
}

// The payload sits under /root so that operations on "" (the whole document) work like any other.
// Each event gets its own copy of the operations: a later operation may change a value an earlier
// one inserted, and that value must not carry over to the next event.
function prefixed(op: Operation): Operation {
  const moved = { ...structuredClone(op), path: `/root${op.path}` } as Operation & { from?: string };
  if ('from' in op && typeof op.from === 'string') moved.from = `/root${op.from}`;
  return moved;
}

function describeFailure(op: Operation, index: number, error: Error): string {
  const where = `operation ${index} (${op.op} ${op.path || '""'})`;
  switch (error.name) {
    case 'TestError':
      return `${where}: test failed, the value differs`;
    case 'MissingError':
      return `${where}: nothing at ${'from' in op && error.message.includes(`/root${op.from}`) ? op.from : op.path}`;
    default:
      return `${where}: ${error.message.replace(/\/root/g, '')}`;
  }
}

// The most significant digits a double carries exactly through decimal text (DBL_DIG).
const EXACT_DIGITS = 15;

/** JSON.parse, failing when a number's source text would not survive the trip through a double. */
function parseExactly(text: string): { ok: true; value: unknown } | { ok: false; at: string } {
  let inexact: string | null = null;
  const value: unknown = JSON.parse(text, function (this: unknown, key, v: unknown, context?: { source?: string }) {
    if (inexact === null && typeof v === 'number' && context?.source !== undefined && !isExactNumber(context.source, v)) inexact = key === '' ? '/' : `…/${key}`;
    return v;
  });
  return inexact === null ? { ok: true, value } : { ok: false, at: inexact };
}

function isExactNumber(source: string, value: number): boolean {
  if (!Number.isFinite(value)) return false;
  const mantissa = source.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '');
  const digits = mantissa.replace(/^0+/, '').replace(/0+$/, '');
  if (digits.length > EXACT_DIGITS) return false;
  return !(value === 0 && digits.length > 0); // underflow to 0
}
