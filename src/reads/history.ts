// Dead letters' histories and delivery attempts, for many dead letters in one statement per kind.
export { findDeadLetterActions as readDeadLetterActions, findDeliveryAttempts as readDeliveryAttempts } from '../db/models/deadLetterHistory.ts';
