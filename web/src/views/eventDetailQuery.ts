// The event page's query and the event it answers, shared by the page and its attempt entries.
import { graphql, type ResultOf } from '../graphql.ts';

export const DetailQuery = graphql(`
  query EventDetail($id: ID!) {
    deadLetter(id: $id) {
      id status version eventType queue source attempts maxAttemptsOverride createdAt occurredAt updatedAt nextAttemptAt
      orderingKey dedupeKey resolvedAt resolvedBy resolutionReason payload headers origin
      error { kind message stack }
      errorSignature
      errorGroupId
      held { reason policyEventType headId }
      timeline {
        at
        action { id action actor reason before after createdAt redriveId }
        attempt {
          id attemptNumber outcome statusCode durationMs errorMessage responseBody workerId
          failureKind permanentReason target requestBodyBytes requestBodySha256 responseBodyTruncated
          requestHeaders { name value } responseHeaders { name value }
        }
      }
    }
  }
`);

export type Detail = NonNullable<ResultOf<typeof DetailQuery>['deadLetter']>;
