import { describe, expect, it } from 'vitest';
import { ValidationError } from '../src/domain/errors.ts';
import { validateRecordInput } from '../src/domain/recordInput.ts';
import { allowedFromStatuses, isAllowedTransition } from '../src/domain/transitions.ts';

const rules = { allowedEventTypes: [] };

describe('validateRecordInput', () => {
  it.each([
    ['undefined', undefined],
    ['a function', () => 1],
    ['a bigint', 1n],
    ['a circular object', (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()],
  ])('refuses a payload that is not JSON: %s', (_name, payload) => {
    expect(() => validateRecordInput({ eventType: 'e', payload }, rules)).toThrow(ValidationError);
    expect(() => validateRecordInput({ eventType: 'e', payload }, rules)).toThrow('payload: must be JSON');
  });

  it('accepts any JSON shape, exactly up to the size cap', () => {
    const overhead = JSON.stringify('').length;
    expect(validateRecordInput({ eventType: 'e', payload: 'x'.repeat(256 * 1024 - overhead) }, rules).payloadJson).toHaveLength(256 * 1024);
    expect(() => validateRecordInput({ eventType: 'e', payload: 'x'.repeat(256 * 1024 - overhead + 1) }, rules)).toThrow(/at most 262144 bytes/);
    expect(validateRecordInput({ eventType: 'e', payload: [1, 'a', null] }, rules).payloadJson).toBe('[1,"a",null]');
  });
});

describe('transitions', () => {
  it('never lets an operator touch a PROCESSING event', () => {
    for (const action of ['REQUEUE', 'RESOLVE', 'DISCARD', 'DELETE', 'EDIT_PAYLOAD'] as const) {
      expect(isAllowedTransition(action, 'PROCESSING', true)).toBe(false);
    }
  });

  it('needs force to requeue a final event', () => {
    expect(allowedFromStatuses('REQUEUE')).toEqual(['PENDING', 'EXHAUSTED']);
    expect(allowedFromStatuses('REQUEUE', true)).toEqual(['PENDING', 'EXHAUSTED', 'SUCCEEDED', 'RESOLVED', 'DISCARDED']);
  });
});
