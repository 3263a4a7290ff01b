// The Policies page's query and the rows it answers, shared by the page and the policy form.
import { graphql, type ResultOf } from '../graphql.ts';

export const PoliciesQuery = graphql(`
  query Policies {
    retryPolicies {
      eventType maxAttempts backoff baseDelayMs maxDelayMs timeoutMs paused ordered concurrency
      target { kind description settings secretsSet }
      allowPrivateTarget permanentStatusCodes permanentErrorKinds updatedAt updatedBy
    }
    retryTargetKinds { kind label fields { name label isSecret isRequired placeholder } }
    retryTargetHealth { kind target state lastError lastErrorAt }
  }
`);

export type Policy = ResultOf<typeof PoliciesQuery>['retryPolicies'][number];
export type TargetKind = ResultOf<typeof PoliciesQuery>['retryTargetKinds'][number];
export type TargetHealth = ResultOf<typeof PoliciesQuery>['retryTargetHealth'][number];
