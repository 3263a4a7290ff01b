// Single dead letters by id (pages are in deadLetterPages.ts).
export { findDeadLetter as readDeadLetter, findDeadLetterOrThrow as readDeadLetterOrThrow } from '../db/models/deadLetters.ts';
