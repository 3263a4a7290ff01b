// The payload edit, shared by the event page (its undo) and the lazily loaded editor.
import { graphql } from '../graphql.ts';

export const EditPayload = graphql(`
  mutation EditPayload($input: EditDeadLetterPayloadInput!) {
    editDeadLetterPayload(input: $input) { __typename ... on DeadLetter { id version } ... on MutationError { code message } }
  }
`);

/** What the editor needs of an event. */
export interface EditableEvent {
  id: string;
  version: number;
  payload: unknown;
}
