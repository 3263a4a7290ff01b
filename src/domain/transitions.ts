// Which operator action is legal from which status. PROCESSING is never touched by an operator:
// a worker holds a lease on it and is about to record the outcome.
import type { DeadLetterStatus } from '../generated/prisma/enums.ts';

export type OperatorAction = 'REQUEUE' | 'RESOLVE' | 'DISCARD' | 'DELETE' | 'EDIT_PAYLOAD';

const FINAL: DeadLetterStatus[] = ['SUCCEEDED', 'RESOLVED', 'DISCARDED'];

/** Statuses from which `action` may change a row; `force` widens requeue to final statuses. */
export function allowedFromStatuses(action: OperatorAction, force = false): DeadLetterStatus[] {
  switch (action) {
    case 'REQUEUE':
      return force ? ['PENDING', 'EXHAUSTED', ...FINAL] : ['PENDING', 'EXHAUSTED'];
    case 'RESOLVE':
    case 'DISCARD':
      return ['PENDING', 'EXHAUSTED'];
    case 'DELETE':
    case 'EDIT_PAYLOAD':
      return ['PENDING', 'EXHAUSTED', ...FINAL];
  }
}

/** True when `action` is legal from `status`. */
export function isAllowedTransition(action: OperatorAction, status: DeadLetterStatus, force = false): boolean {
  return allowedFromStatuses(action, force).includes(status);
}

/** Extra words for an error message, telling the operator how to proceed. */
export function transitionHint(action: OperatorAction, status: DeadLetterStatus): string {
  if (status === 'PROCESSING') return ' (a worker holds it; wait for the attempt to finish)';
  if (action === 'REQUEUE' && FINAL.includes(status)) return ' without force: true';
  return '';
}
