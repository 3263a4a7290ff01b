// Patch documents for payload transforms: a JSON Patch (RFC 6902) or a JSON Merge Patch (RFC 7396,
// applied by `json-merge-patch`), checked once up front, then applied to one payload at a time.
// Pure: no database, no clock.
//
// JSON Patch is applied here, not by `rfc6902` (issue 32): that library clones a copied value
// before anything can measure it (24 `copy from ""` operations doubled a 1 KB payload until the
// heap gave out at 4.3 GB), compares `test` values with a diff that is quadratic in memory (one
// `test` of two 1,000-element arrays fills a 256 MB heap), drops `__proto__` keys from values it
// clones, and walks into inherited members (`remove /toString` "succeeded"). Here every value is
// measured before it is cloned, against MAX_PATCH_ADDED_BYTES.
import { isDeepStrictEqual } from 'node:util';
import mergePatchLib from 'json-merge-patch';
import type { Operation } from 'rfc6902';
import { MAX_PAYLOAD_BYTES } from '../db/sql/checkPayloadLimits.ts';
import { ValidationError } from './errors.ts';
import { isExactNumber } from '../db/exactJson.ts';

export const MAX_PATCH_OPERATIONS = 1000;
/**
 * The most JSON (bytes, as JSON.stringify writes it) one patch may put into one payload: its
 * add, replace and test values and every value its copy operations duplicate, together. The
 * payload cap, so a patch can still copy a whole payload once; it bounds each event's memory
 * (the document stays under twice the cap) and work (every clone and comparison is of counted bytes).
 */
export const MAX_PATCH_ADDED_BYTES = MAX_PAYLOAD_BYTES;
/** Why a result is refused without asking the database: jsonb's text is never shorter than JSON.stringify's. */
export const TOO_LARGE_REASON = `the result would be larger than ${MAX_PAYLOAD_BYTES} bytes (payload size CHECK)`;
const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);
// Paths naming these are refused: json-merge-patch silently stops applying the rest of a patch
// when it meets one as a key, so a merge patch with them would be half-applied; JSON Patch paths
// follow the same rule. Values (and stored payloads) keep such keys exactly.
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export type PayloadPatch =
  | { kind: 'JSON_PATCH'; operations: Operation[]; /** Bytes of the add, replace and test values, together. */ valueBytes: number }
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
  let valueBytes = 0;
  const operations = input.patch.map((op: unknown, i) => {
    const checked = checkOperation(op, i);
    if ('value' in checked) {
      valueBytes += jsonBytes(checked.value, (m) => new InvalidPatchError('patch', `operation ${i}: "value" ${m}`, i));
      if (valueBytes > MAX_PATCH_ADDED_BYTES) throw new InvalidPatchError('patch', `operation ${i}: the values of operations 0 to ${i} hold more than ${MAX_PATCH_ADDED_BYTES} bytes of JSON, the most one patch may add to a payload`, i);
    }
    return checked;
  });
  return { kind: 'JSON_PATCH', operations, valueBytes };
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
  for (const key of tokensOf(pointer)) {
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

/** UTF-8 bytes of the value's JSON text. */
function jsonBytes(value: unknown, fail: (m: string) => Error): number {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    // JSON.stringify recurses: a value thousands of levels deep overflows the stack.
    throw error instanceof RangeError ? fail('is nested too deep') : fail('must be JSON');
  }
  if (json === undefined) throw fail('must be JSON');
  return Buffer.byteLength(json);
}

export type PatchOutcome =
  | { kind: 'changed'; afterJson: string }
  | { kind: 'unchanged' }
  /** `breaksLimits`: refused for its size, which no skipFailing lets through. */
  | { kind: 'failed'; reason: string; breaksLimits?: boolean };

/**
 * Applies the patch to one stored payload, given as PostgreSQL's `payload::text`. A payload with a
 * number that a JavaScript double cannot carry exactly (db/exactJson.ts, isExactNumber) fails
 * instead of being rewritten with a rounded value. Only the result's text is kept, so a batch
 * holds one string per changed event, never its parsed objects.
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
    const result = applyJsonPatch(structuredClone(before), patch);
    if (!result.ok) return result.failure;
    after = result.value;
  }
  if (after === undefined) return { kind: 'failed', reason: 'the patch removed the whole payload' };
  if (isDeepStrictEqual(before, after)) return { kind: 'unchanged' };
  const afterJson = JSON.stringify(after);
  if (afterJson.length > MAX_PAYLOAD_BYTES || (afterJson.length * 3 > MAX_PAYLOAD_BYTES && Buffer.byteLength(afterJson) > MAX_PAYLOAD_BYTES)) {
    return { kind: 'failed', reason: TOO_LARGE_REASON, breaksLimits: true };
  }
  return { kind: 'changed', afterJson };
}

type Container = Record<string, unknown> | unknown[];
type Failed = { ok: false; failure: Extract<PatchOutcome, { kind: 'failed' }> };

/**
 * RFC 6902 over a document this call owns. The document sits in a box so that "" (the whole
 * document) is a member like any other. Values are cloned when inserted, so a later operation
 * that changes an inserted value never reaches the patch (the next event gets the original).
 */
function applyJsonPatch(document: unknown, patch: Extract<PayloadPatch, { kind: 'JSON_PATCH' }>): { ok: true; value: unknown } | Failed {
  const box: Container = { root: document };
  let added = patch.valueBytes;
  for (const [index, op] of patch.operations.entries()) {
    const fail = (reason: string, breaksLimits = false): Failed =>
      ({ ok: false, failure: { kind: 'failed', reason: `operation ${index} (${op.op} ${op.path || '""'}): ${reason}`, ...(breaksLimits && { breaksLimits }) } });
    const missing = (pointer: string) => fail(`nothing at ${pointer || '""'}`);
    switch (op.op) {
      case 'add':
        if (!insert(box, op.path, structuredClone(op.value))) return missing(op.path);
        break;
      case 'replace': {
        const at = locate(box, op.path);
        if (at === null || memberOf(at.container, at.key) === undefined) return missing(op.path);
        setMember(at.container, at.key, structuredClone(op.value));
        break;
      }
      case 'remove':
        if (take(box, op.path) === undefined) return missing(op.path);
        break;
      case 'move': {
        const value = valueAt(box, op.from);
        if (value === undefined) return missing(op.from);
        if (op.from === op.path) break;
        take(box, op.from);
        if (!insert(box, op.path, value)) return missing(op.path);
        break;
      }
      case 'copy': {
        const value = valueAt(box, op.from);
        if (value === undefined) return missing(op.from);
        added += Buffer.byteLength(JSON.stringify(value));
        if (added > MAX_PATCH_ADDED_BYTES) return fail(`copying ${op.from || '""'} would bring what the patch adds to this payload past ${MAX_PATCH_ADDED_BYTES} bytes`, true);
        if (!insert(box, op.path, structuredClone(value))) return missing(op.path);
        break;
      }
      case 'test':
        if (!isJsonEqual(valueAt(box, op.path), op.value)) return fail('test failed, the value differs');
        break;
    }
  }
  return { ok: true, value: box.root };
}

const isArrayIndex = (key: string) => /^(0|[1-9][0-9]*)$/.test(key);

function tokensOf(pointer: string): string[] {
  return pointer === '' ? [] : pointer.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** An own member only: `/toString` names nothing in `{}`, and `/length` nothing in an array. */
function memberOf(container: Container, key: string): unknown {
  if (Array.isArray(container)) return isArrayIndex(key) ? container[Number(key)] : undefined;
  return Object.hasOwn(container, key) ? container[key] : undefined;
}

/** A data property whatever the key, so `__proto__` in a value is a key like any other. */
function setMember(container: Container, key: string, value: unknown): void {
  if (Array.isArray(container)) container[Number(key)] = value;
  else Object.defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The container holding the pointer's last token, and that token; null when the way there is missing. */
function locate(box: Container, pointer: string): { container: Container; key: string } | null {
  const tokens = ['root', ...tokensOf(pointer)];
  let container: Container = box;
  for (const token of tokens.slice(0, -1)) {
    const next = memberOf(container, token);
    if (next === null || typeof next !== 'object') return null;
    container = next as Container;
  }
  return { container, key: tokens[tokens.length - 1]! };
}

function valueAt(box: Container, pointer: string): unknown {
  const at = locate(box, pointer);
  return at === null ? undefined : memberOf(at.container, at.key);
}

function insert(box: Container, pointer: string, value: unknown): boolean {
  const at = locate(box, pointer);
  if (at === null) return false;
  if (!Array.isArray(at.container)) setMember(at.container, at.key, value);
  else if (at.key === '-') at.container.push(value);
  else if (isArrayIndex(at.key) && Number(at.key) <= at.container.length) at.container.splice(Number(at.key), 0, value);
  else return false;
  return true;
}

/** Removes and returns the member, or undefined when there is none. */
function take(box: Container, pointer: string): unknown {
  const at = locate(box, pointer);
  const value = at === null ? undefined : memberOf(at.container, at.key);
  if (value === undefined) return undefined;
  if (Array.isArray(at!.container)) at!.container.splice(Number(at!.key), 1);
  else delete at!.container[at!.key];
  return value;
}

/** RFC 6902 equality for `test`: linear, stops at the first difference (numbers by value, keys in any order). */
function isJsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((x, i) => isJsonEqual(x, other[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && isJsonEqual(x[k], y[k]));
}

/** JSON.parse, failing when a number's source text would not survive the trip through a double. */
function parseExactly(text: string): { ok: true; value: unknown } | { ok: false; at: string } {
  let inexact: string | null = null;
  const value: unknown = JSON.parse(text, function (this: unknown, key, v: unknown, context?: { source?: string }) {
    if (inexact === null && typeof v === 'number' && context?.source !== undefined && !isExactNumber(context.source, v)) inexact = key === '' ? '/' : `…/${key}`;
    return v;
  });
  return inexact === null ? { ok: true, value } : { ok: false, at: inexact };
}
