// Times contenders in turn, sample by sample, so load from elsewhere on the machine hits them
// alike: p50 and p95 of each, in ms. bench:read and bench:read:page share it.

export interface WarmUp {
  /** Rounds of every contender before timing: at most this many. */
  rounds: number;
  /** Past the first 10 rounds, stop warming up after this long (default: run every round). */
  ms?: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export async function timeAlternating(runs: Array<() => Promise<unknown>>, n: number, warmUp: WarmUp): Promise<{ p50: number; p95: number }[]> {
  const warmUntil = performance.now() + (warmUp.ms ?? Infinity);
  for (let i = 0; i < warmUp.rounds && (i < 10 || performance.now() < warmUntil); i++) for (const run of runs) await run();
  const samples = runs.map((): number[] => []);
  for (let i = 0; i < n; i++) {
    for (const [k, run] of runs.entries()) {
      const start = performance.now();
      await run();
      samples[k]!.push(performance.now() - start);
    }
  }
  return samples.map((s) => {
    s.sort((x, y) => x - y);
    return { p50: percentile(s, 50), p95: percentile(s, 95) };
  });
}
