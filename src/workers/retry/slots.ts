// The process's delivery slots: at most `size` deliveries in flight, across every pass that is
// alive at once (the loop overlaps a pass's tail with the next pass's claim). Waiters are served
// first come, first served; a waiter whose signal aborts gives up its place.
export interface Slots {
  /** Resolves true once a slot is held, or false if `signal` aborted first (nothing held). */
  acquire(signal: AbortSignal): Promise<boolean>;
  release(): void;
  /** Slots held right now. */
  readonly inUse: number;
}

export function createSlots(size: number): Slots {
  let inUse = 0;
  const waiting: Array<() => void> = [];
  return {
    get inUse() {
      return inUse;
    },
    acquire(signal) {
      if (signal.aborted) return Promise.resolve(false);
      if (inUse < size) {
        inUse += 1;
        return Promise.resolve(true);
      }
      return new Promise((resolve) => {
        const grant = () => {
          signal.removeEventListener('abort', giveUp);
          resolve(true);
        };
        const giveUp = () => {
          waiting.splice(waiting.indexOf(grant), 1);
          resolve(false);
        };
        waiting.push(grant);
        signal.addEventListener('abort', giveUp, { once: true });
      });
    },
    release() {
      // A released slot passes straight to the next waiter, so `inUse` does not change.
      const next = waiting.shift();
      if (next) next();
      else inUse -= 1;
    },
  };
}
