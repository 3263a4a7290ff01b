// How many rows the next batch of a periodic job takes. Each batch is one transaction, and while it
// holds an xid the live feed holds back every change committed after it began (docs/live-feed.md),
// so a batch should take about `targetMs`, whatever the data or the machine's load makes a row cost:
// after a slower batch the next is smaller in proportion, after a quicker one it grows (at most
// doubling) back towards `max`. A fixed count of 200 ledger rows took 20 ms at the median and up to
// 900 ms on a loaded machine (bench:live at 1M events).

export interface BatchSizeOptions {
  /** The first batch's size, and the most any batch takes. */
  max: number;
  /** The fewest a batch takes, however slow the last one was. Default 1. */
  min?: number;
  /** What a batch should take. Default BATCH_TARGET_MS. */
  targetMs?: number;
}

export const BATCH_TARGET_MS = 50;

export class BatchSize {
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private readonly targetMs: number;

  constructor(options: BatchSizeOptions) {
    this.max = Math.max(1, Math.floor(options.max));
    this.min = Math.min(this.max, Math.max(1, Math.floor(options.min ?? 1)));
    this.targetMs = options.targetMs ?? BATCH_TARGET_MS;
    this.current = this.max;
  }

  /** Rows for the next batch. */
  get rows(): number {
    return this.current;
  }

  /** How long the batch of `rows` rows just took; sets the next batch's size. */
  took(ms: number): void {
    const scaled = ms > 0 ? Math.floor((this.current * this.targetMs) / ms) : this.max;
    this.current = Math.min(this.max, 2 * this.current, Math.max(this.min, scaled));
  }

  /** Runs `batch` with the current size, timing it. */
  async run<T>(batch: (rows: number) => Promise<T>): Promise<T> {
    const started = performance.now();
    const result = await batch(this.current);
    this.took(performance.now() - started);
    return result;
  }
}

/**
 * A job's batch size from its option: a BatchSize as it is (kept across runs by the service's jobs),
 * a number as a fixed size, none as a new BatchSize of at most `max`.
 */
export function batchSizeOf(option: number | BatchSize | undefined, max: number): BatchSize {
  if (option instanceof BatchSize) return option;
  return option === undefined ? new BatchSize({ max }) : new BatchSize({ max: option, min: option });
}
