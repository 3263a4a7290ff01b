import { AttemptOutcome, DeadLetterStatus, ErrorKind } from '../../generated/prisma/enums.ts';
import { builder } from './builder.ts';

export const DeadLetterStatusEnum = builder.enumType(DeadLetterStatus, {
  name: 'DeadLetterStatus',
  description:
    'PENDING waits for nextAttemptAt; PROCESSING is claimed by a worker; SUCCEEDED, RESOLVED and DISCARDED are final; EXHAUSTED ran out of attempts and needs a person.',
});

export const ErrorKindEnum = builder.enumType(ErrorKind, {
  name: 'ErrorKind',
  description: 'Broad class of the original failure, as reported by the producer.',
});

export const AttemptOutcomeEnum = builder.enumType(AttemptOutcome, {
  name: 'AttemptOutcome',
  description: 'How one delivery attempt ended.',
});
