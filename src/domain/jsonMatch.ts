// jsonb semantics in memory, so `matchesDeadLetterFilter` agrees with PostgreSQL's `@>` and `=`.

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** jsonb equality: object key order does not matter, arrays compare in order. */
export function jsonEquals(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEquals(x, b[i]));
  }
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEquals(a[k], b[k]));
  }
  return a === b;
}

/**
 * jsonb containment (`container @> contained`): objects contain subsets of their keys
 * (recursively), arrays contain arrays whose every element is contained by some element, and —
 * only at the top level — an array contains a primitive it holds.
 */
export function jsonContains(container: unknown, contained: unknown, topLevel = false): boolean {
  if (isObject(contained)) {
    return isObject(container) && Object.keys(contained).every((k) => Object.hasOwn(container, k) && jsonContains(container[k], contained[k]));
  }
  if (Array.isArray(contained)) {
    return Array.isArray(container) && contained.every((c) => container.some((x) => jsonContains(x, c)));
  }
  if (topLevel && Array.isArray(container)) return container.some((x) => !isObject(x) && !Array.isArray(x) && x === contained);
  return container === contained;
}
