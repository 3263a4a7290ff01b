import { AttemptOutcome, DeadLetterStatus, DeliveryFailureKind, ErrorKind, PermanentReason } from '../../generated/prisma/enums.ts';
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

export const DeliveryFailureKindEnum = builder.enumType(DeliveryFailureKind, {
  name: 'DeliveryFailureKind',
  description: 'Why a delivery failed: UNREACHABLE (nothing was handed over: connection refused, DNS, a broker down), REJECTED (the target answered no: an HTTP error status, a nack), TIMEOUT (no answer within the policy’s timeout), INVALID_TARGET (the policy’s target cannot be used: bad settings, a private host, an unknown kind).',
});

export const PermanentReasonEnum = builder.enumType(PermanentReason, {
  name: 'PermanentReason',
  description: 'Which rule made an attempt the last one (the event went EXHAUSTED): PERMANENT_STATUS_CODE (the status is one of the policy’s permanent status codes), PERMANENT_ERROR_KIND (the handler’s error kind is one of its permanent error kinds), PERMANENT_ERROR (the handler or target said retrying cannot help: a PermanentDeliveryError, a redirect to a non-http URL), INVALID_TARGET (the target’s settings or address cannot be used), MAX_ATTEMPTS (the event ran out of attempts).',
});
