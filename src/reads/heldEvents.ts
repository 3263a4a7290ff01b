// Held events (PENDING events the retry loop will not deliver until something changes): which, and why.
export {
  countHeldEvents as readHeldEventCounts, findHeldEvents as readHeldEvents, type HeldCount, type HeldEvent, type HeldReason,
} from '../db/sql/heldEvents.ts';
