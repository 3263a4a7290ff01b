// The seam between notify/ (which reads changes) and graphql/ (which streams them): typed events
// on a graphql-yoga pubsub. One change batch is read once and shared by every subscriber.
import { setMaxListeners } from 'node:events';
import { createPubSub, type PubSub } from 'graphql-yoga';
import type { DeadLetterChangeRow } from '../db/sql/readDeadLetterChanges.ts';
import type { DeliveryAttemptChangeRow } from '../db/sql/readDeliveryAttemptChanges.ts';
import type { TombstoneChangeRow } from '../db/sql/readTombstoneChanges.ts';
import type { ChangeCursor } from './changeCursor.ts';

export type DeadLetterRow = DeadLetterChangeRow;
export type DeliveryAttemptRow = DeliveryAttemptChangeRow;
export type RemovedDeadLetterRow = TombstoneChangeRow;

export interface DeadLetterChangeEvent {
  cursor: ChangeCursor;
  /** The row as read; a row changed twice between reads shows only its latest state. Null when deleted. */
  deadLetter: DeadLetterRow | null;
  /** For a deletion: the row's id and the columns filters match on, as it was when deleted. */
  removed: RemovedDeadLetterRow | null;
  /** version 0: never updated since its insert (see the coalescing note in live/changeFeed.ts). */
  isNew: boolean;
}

export interface DeliveryAttemptEvent {
  cursor: ChangeCursor;
  attempt: DeliveryAttemptRow;
  /** The attempt's dead letter as read in the same batch (null if it was purged meanwhile). */
  deadLetter: DeadLetterRow | null;
}

/** Changes in cursor order, published once per database read. */
export interface ChangeBatch {
  deadLetters: DeadLetterChangeEvent[];
  attempts: DeliveryAttemptEvent[];
}

export type LiveEvents = { changeBatch: [ChangeBatch] };

export interface LivePubSub {
  pubsub: PubSub<LiveEvents>;
  /**
   * Calls `listener` synchronously for every batch until the returned function is called. Used
   * instead of pubsub.subscribe so each subscriber's buffer is ours and bounded.
   */
  onBatch(listener: (batch: ChangeBatch) => void): () => void;
  /** Listeners registered with onBatch right now (one per open subscription). */
  listenerCount(): number;
}

export function createLivePubSub(): LivePubSub {
  const target = new EventTarget();
  // One listener per subscriber: hundreds are expected, not a leak.
  setMaxListeners(0, target);
  const pubsub = createPubSub<LiveEvents>({ eventTarget: target as never });
  let listeners = 0;
  return {
    pubsub,
    onBatch(listener) {
      const handler = (event: Event) => listener((event as CustomEvent<ChangeBatch>).detail);
      target.addEventListener('changeBatch', handler);
      listeners += 1;
      let removed = false;
      return () => {
        if (removed) return;
        removed = true;
        listeners -= 1;
        target.removeEventListener('changeBatch', handler);
      };
    },
    listenerCount: () => listeners,
  };
}

/** What the GraphQL layer needs from the running feed. */
export interface LiveFeed {
  events: LivePubSub;
  /** Dead letter changes after `after`, below the current horizon, in cursor order, in batches. */
  replayDeadLetterChanges(after: ChangeCursor): AsyncIterable<DeadLetterChangeEvent[]>;
  /** Events a subscriber may have queued before it is disconnected as too slow. */
  maxQueuedEvents: number;
}
