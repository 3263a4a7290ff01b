import { badUserInput } from './errors.ts';

const MAX_BIGINT = 9223372036854775807n;
const ID_PATTERN = /^[1-9][0-9]{0,18}$/;

/**
 * Database ids are bigint; GraphQL carries them as decimal strings. Anything that is not a
 * positive int64 ("abc", "-1", "1.5", "9223372036854775808") is BAD_USER_INPUT, not a 500.
 */
export function parseId(raw: string | number, argument = 'id'): bigint {
  const text = String(raw);
  if (!ID_PATTERN.test(text) || BigInt(text) > MAX_BIGINT) {
    throw badUserInput(`${argument} must be a positive integer id below 2^63, got ${JSON.stringify(text).slice(0, 40)}`, { argument });
  }
  return BigInt(text);
}
