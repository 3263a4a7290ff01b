// json-merge-patch ships no types; the one function Lazarus uses (RFC 7396 apply).
declare module 'json-merge-patch' {
  /** Applies `patch` to `target` (mutated when it is an object) and returns the result. */
  function apply(target: unknown, patch: unknown): unknown;
  const mergePatch: { apply: typeof apply };
  export default mergePatch;
}
