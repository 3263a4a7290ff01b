import { describe, expect, it } from 'vitest';
import { isExactNumber, isKeptNumber, parseJsonKeepingNumbers } from '../src/db/exactJson.ts';
import { isDeeperThan } from '../src/domain/recordInput.ts';

describe('parseJsonKeepingNumbers', () => {
  it('prints back every number a double cannot carry as it came, and parses the rest as JSON.parse does', () => {
    const text = '{"id":12345678901234567890,"amount":0.1000000000000000055511151231257827,"big":1e400,"tiny":1e-400,"n":[1,2.5,-3],"s":"12345678901234567890"}';
    const value = parseJsonKeepingNumbers(text) as Record<string, unknown>;
    expect(JSON.stringify(value)).toBe(text);
    expect(value.n).toEqual([1, 2.5, -3]);
    expect(value.s).toBe('12345678901234567890');
    expect(isKeptNumber(value.id)).toBe(true);
    expect(JSON.stringify(JSON.parse(text))).not.toBe(text);
  });

  it('keeps a 17-digit decimal whose point splits its digits', () => {
    expect(JSON.stringify(parseJsonKeepingNumbers('[1234567890.1234567]'))).toBe('[1234567890.1234567]');
  });

  it('counts a kept number as a leaf of the document, as the number it is', () => {
    expect(isDeeperThan(parseJsonKeepingNumbers('{"a":{"b":12345678901234567890}}'), 2)).toBe(false);
    expect(isDeeperThan(parseJsonKeepingNumbers('{"a":{"b":12345678901234567890}}'), 1)).toBe(true);
  });
});

describe('parseJsonKeepingNumbers, which text it parses without a reviver', () => {
  it('keeps numbers at the start of the text, after a key, in a list and after spaces, as jsonb prints them', () => {
    for (const text of ['12345678901234567890', '{"a": 12345678901234567890}', '[1, -12345678901234567890]', '{"a": [2.5e400]}', '{"a":1E-400}']) {
      expect(JSON.stringify(parseJsonKeepingNumbers(text))).toBe(text.replace(/ /g, ''));
    }
  });

  it('takes hex ids and long digit runs inside strings as the strings they are', () => {
    const text = '{"id":"9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d","hex":"ab3e45","card":"4111111111111111","e":"1e5"}';
    expect(parseJsonKeepingNumbers(text)).toEqual(JSON.parse(text));
  });
});

describe('isExactNumber', () => {
  it('holds for a number whose double prints back as the same decimal, however many digits it has', () => {
    for (const text of ['0.9837133550488599', '0.30000000000000004', '1.0', '1e3', '-0', '123456789012345', '9007199254740992e-3', '5e-324']) {
      expect([text, isExactNumber(text, Number(text))]).toEqual([text, true]);
    }
  });

  it('fails for one the double changes: too many digits, out of range, or below the smallest double', () => {
    for (const text of ['12345678901234567890', '0.1000000000000000055511151231257827', '9007199254740993', '1e400', '1e-400', '-1e-400']) {
      expect([text, isExactNumber(text, Number(text))]).toEqual([text, false]);
    }
  });

  it('keeps a computed ratio a plain number: the console does arithmetic with it', () => {
    expect(parseJsonKeepingNumbers('{"retrySuccessRate": 0.9837133550488599}')).toEqual({ retrySuccessRate: 0.9837133550488599 });
  });
});
