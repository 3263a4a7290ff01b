// Operations preloaded in GraphiQL tabs, so a first-time visitor can run something at once.
export const EXAMPLE_OPERATIONS: { query: string; variables?: string }[] = [
  {
    query: `# Newest dead letters with their errors
query LatestDeadLetters {
  deadLetters(first: 20) {
    totalCount
    edges {
      node { id eventType status attempts createdAt error { kind message } }
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
  },
  {
    query: `# One event's full story: payload, headers, error and every delivery attempt
query DeadLetter($id: ID!) {
  deadLetter(id: $id) {
    id eventType queue source status attempts nextAttemptAt
    payload headers
    error { kind message stack }
    deliveryAttempts { attemptNumber startedAt durationMs outcome statusCode errorMessage }
  }
}`,
    variables: JSON.stringify({ id: '1' }, null, 2),
  },
  {
    query: `# Dead-letter a batch of failed events (idempotent on dedupeKey)
mutation RecordDeadLetters($inputs: [RecordDeadLetterInput!]!) {
  recordDeadLetters(inputs: $inputs) {
    __typename
    ... on RecordedDeadLetters { createdCount duplicateCount results { id created } }
    ... on ValidationError { field index message }
  }
}`,
    variables: JSON.stringify({
      inputs: [{
        eventType: 'order.placed', payload: { orderId: 7 }, queue: 'orders', source: 'checkout',
        error: { kind: 'DOWNSTREAM_API', message: 'HTTP 503 from inventory-service' },
        headers: { topic: 'orders', partition: 3, offset: 42 }, dedupeKey: 'orders-3-42',
      }],
    }, null, 2),
  },
  {
    query: `# Dry run, then requeue everything that failed against a downstream API
mutation RequeueDownstreamFailures($dryRun: Boolean) {
  requeueDeadLetters(input: { filter: { errorKinds: [DOWNSTREAM_API], statuses: [EXHAUSTED] }, resetAttempts: true, dryRun: $dryRun, reason: "inventory-service is back" }) {
    __typename
    ... on RequeueResult { count ids dryRun redrive { id status total processed progress } }
    ... on MutationError { code message }
  }
}`,
    variables: JSON.stringify({ dryRun: true }, null, 2),
  },
  {
    query: `# Resolve events handled elsewhere (a reason is required)
mutation Resolve($ids: [ID!]) {
  resolveDeadLetters(input: { ids: $ids, reason: "replayed by hand from the Kafka DLQ" }) {
    __typename
    ... on BulkChange { count ids }
    ... on MutationError { code message }
  }
}`,
    variables: JSON.stringify({ ids: ['1'] }, null, 2),
  },
  {
    query: `# Fix a payload and retry it (the previous payload is kept in history)
mutation EditAndRetry($id: ID!) {
  editDeadLetterPayload(input: { id: $id, payload: { orderId: 7, qty: 3 }, requeue: true, reason: "qty must be a number" }) {
    __typename
    ... on DeadLetter { id status payload version }
    ... on MutationError { code message }
  }
}`,
    variables: JSON.stringify({ id: '1' }, null, 2),
  },
  {
    query: `# Throttled redrives: progress, pause, resume, cancel
query Redrives {
  redrives(first: 10) { id status total processed requeued skipped progress ratePerSecond createdBy createdAt finishedAt }
}`,
  },
  {
    query: `# What failed yesterday, and why (UTC day): counts, top errors, hourly series
query FailedYesterday($since: DateTime!, $until: DateTime!) {
  deadLetterStats(filter: { createdAt: { from: $since, to: $until } }) {
    total
    byEventType { key count }
    byErrorKind { key count }
    topErrors(limit: 10) { signature count firstSeen lastSeen sampleId }
    timeSeries(bucket: HOUR, from: $since, to: $until) { start count }
    blockedKeys { orderingKey headId heldBack }
  }
}`,
    variables: JSON.stringify({ since: '2026-11-20T00:00:00Z', until: '2026-11-21T00:00:00Z' }, null, 2),
  },
  {
    query: `# Search: error text, payload containment, ordering
query Search {
  deadLetters(
    filter: { statuses: [PENDING, EXHAUSTED], errorText: "inventory", payloadContains: "{\\"customer\\":{\\"tier\\":\\"gold\\"}}" }
    orderBy: { field: ATTEMPTS, direction: DESC }
    first: 20
  ) {
    edges { node { id eventType status attempts error { message } history { action actor createdAt } } }
    pageInfo { hasNextPage endCursor }
  }
}`,
  },
  {
    query: `# Live: every change to a dead letter as it commits (SSE or WebSocket).
# Pass the last cursor you saw as "after" to resume without gaps or duplicates.
subscription DeadLetterChanges($after: String) {
  deadLetterChanged(after: $after) {
    cursor isNew
    deadLetter { id eventType queue status attempts error { kind message } }
  }
}`,
  },
  {
    query: `# Admin: send order.placed events to a signed webhook, at most 8 attempts
mutation SetOrderPolicy {
  upsertRetryPolicy(input: {
    eventType: "order.placed", maxAttempts: 8, backoff: EXPONENTIAL, baseDelayMs: 2000, maxDelayMs: 600000,
    target: { kind: "webhook", settings: { url: "https://hooks.example.com/orders", secret: "whsec_c2VjcmV0LXNpZ25pbmcta2V5" } }
  }) { eventType maxAttempts target { kind description secretsSet } }
}`,
  },
  {
    query: `# Admin: every retry policy ("*" is the default)
query RetryPolicies {
  retryPolicies { eventType paused ordered maxAttempts backoff baseDelayMs maxDelayMs target { kind description } concurrency }
}`,
  },
];
