// The seam between the change feed (live/changeFeed.ts, which reads changes) and the subscriptions
// in api/ (which stream them): one event target. A change batch is read once and every subscriber
// gets the same one.
import { setMaxListeners } from 'node:events';
import type { DeadLetterChangeRow } from '../db/sql/readDeadLetterChanges.ts';
import type { DeliveryAttemptChangeRow } from '../db/sql/readDeliveryAttemptChanges.ts';
import type { TombstoneChangeRow } from '../db/sql/readTombstoneChanges.ts';
import type { ErrorGroup } from '../generated/prisma/client.ts';
import type { ErrorGroupStatus } from '../generated/prisma/enums.ts';
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

export type ErrorGroupChangeKind = 'CREATED' | 'STATUS_CHANGED' | 'REGRESSED' | 'COUNTS_CHANGED';

export interface ErrorGroupChangeEvent {
  cursor: ChangeCursor;
  kind: ErrorGroupChangeKind;
  /** The group as read; changes between two reads of the feed show only its latest state. */
  group: ErrorGroup;
  /** For status moves: the status it moved from (null for CREATED and COUNTS_CHANGED). */
  fromStatus: ErrorGroupStatus | null;
  reason: string | null;
}

/** Changes in cursor order, published once per database read. */
export interface ChangeBatch {
  deadLetters: DeadLetterChangeEvent[];
  attempts: DeliveryAttemptEvent[];
  errorGroups: ErrorGroupChangeEvent[];
}

export interface LivePubSub {
  /** Hands `batch` to every listener, synchronously. */
  publish(batch: ChangeBatch): void;
  /**
   * Calls `listener` synchronously for every batch until the returned function is called; each
   * subscriber's buffer is its own, and bounded (live/boundedQueue.ts). `errorGroups`: the
   * listener reads batches' error group changes (counted by groupListenerCount).
   */
  onBatch(listener: (batch: ChangeBatch) => void, options?: { errorGroups?: boolean }): () => void;
  /** Listeners registered with onBatch right now (one per open subscription). */
  listenerCount(): number;
  /** Of those, the ones that read error group changes. */
  groupListenerCount(): number;
}

export function createLivePubSub(): LivePubSub {
  const target = new EventTarget();
  // One listener per subscriber: hundreds are expected, not a leak.
  setMaxListeners(0, target);
  let listeners = 0;
  let groupListeners = 0;
  return {
    publish: (batch) => void target.dispatchEvent(new CustomEvent('changeBatch', { detail: batch })),
    onBatch(listener, options) {
      const handler = (event: Event) => listener((event as CustomEvent<ChangeBatch>).detail);
      const groups = options?.errorGroups ? 1 : 0;
      target.addEventListener('changeBatch', handler);
      listeners += 1;
      groupListeners += groups;
      let removed = false;
      return () => {
        if (removed) return;
        removed = true;
        listeners -= 1;
        groupListeners -= groups;
        target.removeEventListener('changeBatch', handler);
      };
    },
    listenerCount: () => listeners,
    groupListenerCount: () => groupListeners,
  };
}

/** What the GraphQL layer needs from the running feed. */
export interface LiveFeed {
  events: LivePubSub;
  /** Dead letter changes after `after`, below the current horizon, in cursor order, in batches. */
  replayDeadLetterChanges(after: ChangeCursor): AsyncIterable<DeadLetterChangeEvent[]>;
  /** Error group changes after `after`, the same way. */
  replayErrorGroupChanges(after: ChangeCursor): AsyncIterable<ErrorGroupChangeEvent[]>;
  /** Events a subscriber may have queued before it is disconnected as too slow. */
  maxQueuedEvents: number;
}
