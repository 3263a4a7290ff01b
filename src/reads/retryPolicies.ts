// Retry policies as the API lists them.
export { findRetryPolicies as readRetryPolicies } from '../db/models/retryPolicies.ts';
