import { describe, expect, it } from 'vitest';
import { BatchSize, batchSizeOf } from '../src/domain/batchSize.ts';

describe('BatchSize', () => {
  it('starts at its most and stays there while batches take less than the target', () => {
    const size = new BatchSize({ max: 200, targetMs: 50 });
    expect(size.rows).toBe(200);
    size.took(20);
    expect(size.rows).toBe(200);
  });

  it('shrinks in proportion after a slow batch, never below its least', () => {
    const size = new BatchSize({ max: 200, min: 10, targetMs: 50 });
    size.took(500);
    expect(size.rows).toBe(20);
    size.took(5_000);
    expect(size.rows).toBe(10);
  });

  it('grows back at most twofold a batch, up to its most', () => {
    const size = new BatchSize({ max: 200, targetMs: 50 });
    size.took(1_000);
    expect(size.rows).toBe(10);
    size.took(1);
    expect(size.rows).toBe(20);
    for (let i = 0; i < 10; i++) size.took(1);
    expect(size.rows).toBe(200);
  });

  it('times the batch it runs, handing it the size it had when the batch began', async () => {
    const size = new BatchSize({ max: 100, targetMs: 10 });
    let asked = 0;
    const slow = new Promise<string>((resolve) => setTimeout(() => resolve('done'), 100));
    expect(await size.run((rows) => ((asked = rows), slow))).toBe('done');
    expect(asked).toBe(100);
    expect(size.rows).toBeLessThanOrEqual(10);
  });

  it('is fixed when a job is given a number, and adaptive when it is given none', () => {
    const fixed = batchSizeOf(7, 200);
    fixed.took(10_000);
    expect(fixed.rows).toBe(7);
    const adaptive = batchSizeOf(undefined, 200);
    adaptive.took(10_000);
    expect(adaptive.rows).toBe(1);
    const kept = new BatchSize({ max: 5 });
    expect(batchSizeOf(kept, 200)).toBe(kept);
  });
});
