// Expected write failures as GraphQL types: mutations list them in `errors: { types }`, and
// clients switch on __typename. Every one implements MutationError { code, message }.
import { ConflictError, DeadLetterNotFoundError, DomainError, InvalidTransitionError, ValidationError } from '../../domain/errors.ts';
import { builder } from './builder.ts';

export const MutationErrorRef = builder.interfaceRef<DomainError>('MutationError').implement({
  description: 'An expected reason a mutation did not happen. Nothing was written.',
  fields: (t) => ({
    code: t.exposeString('code', { description: 'NOT_FOUND, CONFLICT or VALIDATION.' }),
    message: t.exposeString('message'),
  }),
});

builder.objectType(DeadLetterNotFoundError, {
  name: 'DeadLetterNotFoundError',
  description: 'Some of the given ids name no dead letter (code NOT_FOUND).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof DeadLetterNotFoundError,
  fields: (t) => ({ ids: t.idList({ resolve: (e) => e.ids.map(String) }) }),
});

builder.objectType(ConflictError, {
  name: 'ConflictError',
  description: 'A dead letter changed between read and write, e.g. another operator acted first (code CONFLICT).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof ConflictError,
  fields: (t) => ({ ids: t.idList({ resolve: (e) => e.ids.map(String) }) }),
});

builder.objectType(InvalidTransitionError, {
  name: 'InvalidTransitionError',
  description: 'The action is not allowed from the event’s current status (code CONFLICT).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof InvalidTransitionError,
  fields: (t) => ({
    ids: t.idList({ resolve: (e) => e.ids.map(String) }),
    from: t.exposeString('from', { description: 'The current status.' }),
    to: t.exposeString('to', { description: 'The action that was refused.' }),
  }),
});

builder.objectType(ValidationError, {
  name: 'ValidationError',
  description: 'An argument broke a rule: size cap, empty reason, unknown event type, too many items (code VALIDATION).',
  interfaces: [MutationErrorRef],
  isTypeOf: (e) => e instanceof ValidationError,
  fields: (t) => ({
    field: t.exposeString('field'),
    index: t.exposeInt('index', { nullable: true, description: 'For batches: the position of the offending item.' }),
  }),
});

export const ALL_WRITE_ERRORS = [ValidationError, DeadLetterNotFoundError, InvalidTransitionError, ConflictError];
