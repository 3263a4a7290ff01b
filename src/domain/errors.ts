// Expected outcomes of writes. Each class carries the data a client needs to act on it and is
// registered as a GraphQL error type (src/api/schema/writeErrors.ts), so clients switch on __typename.
import type { DeadLetterStatus, ErrorGroupStatus } from '../generated/prisma/enums.ts';

export type DomainErrorCode = 'NOT_FOUND' | 'CONFLICT' | 'VALIDATION';

export class DomainError extends Error {
  override name = 'DomainError';
  readonly code: DomainErrorCode;
  constructor(code: DomainErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** One or more ids name no dead letter. */
export class DeadLetterNotFoundError extends DomainError {
  override name = 'DeadLetterNotFoundError';
  readonly ids: bigint[];
  constructor(ids: bigint[]) {
    super('NOT_FOUND', `no dead letter with id ${ids.slice(0, 10).join(', ')}${ids.length > 10 ? ', …' : ''}`);
    this.ids = ids;
  }
}

/** The row changed between read and write (another operator or the retry loop won the race). */
export class ConflictError extends DomainError {
  override name = 'ConflictError';
  readonly ids: bigint[];
  constructor(ids: bigint[], message = 'the dead letter changed concurrently; reload and try again') {
    super('CONFLICT', message);
    this.ids = ids;
  }
}

/** The action is not legal from the row's current status (e.g. resolving a PROCESSING event). */
export class InvalidTransitionError extends DomainError {
  override name = 'InvalidTransitionError';
  readonly ids: bigint[];
  readonly from: DeadLetterStatus;
  readonly to: string;
  constructor(ids: bigint[], from: DeadLetterStatus, to: string, hint = '') {
    super('CONFLICT', `cannot ${to.toLowerCase()} a ${from} dead letter${hint}`);
    this.ids = ids;
    this.from = from;
    this.to = to;
  }
}

/** An argument breaks a rule (size cap, empty reason, unknown event type, batch too large). */
export class ValidationError extends DomainError {
  override name = 'ValidationError';
  readonly field: string;
  /** For batch inputs: the position of the offending item, else null. */
  readonly index: number | null;
  constructor(field: string, message: string, index: number | null = null, options?: ErrorOptions) {
    super('VALIDATION', index === null ? `${field}: ${message}` : `${field}[${index}]: ${message}`, options);
    this.field = field;
    this.index = index;
  }
}

/** A setting an admin asked for (a retry policy, an alert rule) that cannot be stored; nothing was written. */
export class InvalidSettingError extends Error {
  override name = 'InvalidSettingError';
  /** The input field at fault, and a machine-readable reason (e.g. OUT_OF_RANGE). */
  readonly field: string;
  readonly reason: string;
  constructor(field: string, reason: string, message: string) {
    super(message);
    this.field = field;
    this.reason = reason;
  }
}

/** No error group has this id. */
export class ErrorGroupNotFoundError extends DomainError {
  override name = 'ErrorGroupNotFoundError';
  readonly id: bigint;
  constructor(id: bigint) {
    super('NOT_FOUND', `no error group with id ${id}`);
    this.id = id;
  }
}

/** The group's status does not allow the move (e.g. acknowledging a RESOLVED group). */
export class InvalidErrorGroupTransitionError extends DomainError {
  override name = 'InvalidErrorGroupTransitionError';
  readonly id: bigint;
  readonly from: ErrorGroupStatus;
  readonly to: ErrorGroupStatus;
  constructor(id: bigint, from: ErrorGroupStatus, to: ErrorGroupStatus) {
    super('CONFLICT', `cannot move error group ${id} from ${from} to ${to}`);
    this.id = id;
    this.from = from;
    this.to = to;
  }
}

/**
 * A requeue to source named events that cannot go back where they came from: no origin (not taken
 * in by a bridge), or an origin whose bridge is not declared here (LAZARUS_BRIDGES). Nothing was written.
 */
export class NoSourceError extends DomainError {
  override name = 'NoSourceError';
  /** How many of the selected events have no usable source, and the first of them. */
  readonly count: number;
  readonly ids: bigint[];
  constructor(count: number, ids: bigint[]) {
    super('VALIDATION', `${count} of the selected events cannot be redriven to source (no origin, or its bridge is not declared): ` +
      `${ids.slice(0, 10).join(', ')}${count > 10 ? ', …' : ''}; requeue them to their policy instead, or narrow the selection`);
    this.count = count;
    this.ids = ids;
  }
}
