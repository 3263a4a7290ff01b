// At most one routine event per key per window; urgent events go at once. A routine event inside
// the window is held, replaced by any later one for the same key, and sent when the window ends,
// so the last state always arrives. An urgent event sends now and drops what was held for its key.

export interface Coalescer<T> {
  push(key: string, value: T, urgent: boolean): void;
  /** Drops everything held and cancels the timers. */
  close(): void;
}

export interface CoalescerOptions<T> {
  windowMs: number;
  emit: (value: T) => void;
  /** The clock, in ms; default Date.now. */
  now?: () => number;
  /** Default setTimeout/clearTimeout. */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

export function createCoalescer<T>(o: CoalescerOptions<T>): Coalescer<T> {
  const now = o.now ?? Date.now;
  const setTimer = o.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = o.clearTimer ?? ((timer) => clearTimeout(timer as NodeJS.Timeout));
  const lastSent = new Map<string, number>();
  const held = new Map<string, { value: T; timer: unknown }>();

  const send = (key: string, value: T) => {
    lastSent.set(key, now());
    o.emit(value);
  };

  return {
    push(key, value, urgent) {
      const pending = held.get(key);
      if (urgent) {
        if (pending) clearTimer(pending.timer);
        held.delete(key);
        send(key, value);
        return;
      }
      if (pending) {
        pending.value = value;
        return;
      }
      const since = now() - (lastSent.get(key) ?? -Infinity);
      if (since >= o.windowMs) {
        send(key, value);
        return;
      }
      const timer = setTimer(() => {
        const entry = held.get(key);
        held.delete(key);
        if (entry) send(key, entry.value);
      }, o.windowMs - since);
      held.set(key, { value, timer });
    },
    close() {
      for (const { timer } of held.values()) clearTimer(timer);
      held.clear();
    },
  };
}
