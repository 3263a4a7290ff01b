// One delivery attempt on the event page's timeline: the outcome line, why it failed and why it
// was (or was not) the last, and the request and response as stored (secrets redacted, each field
// capped: docs/reading.md#delivery-attempts).
import { useId } from 'react';
import type { Detail } from './eventDetailQuery.ts';

type Attempt = NonNullable<Detail['timeline'][number]['attempt']>;
type Header = { name: string; value: string };

const FAILURE_KIND: Record<string, string> = {
  UNREACHABLE: 'could not reach the target',
  REJECTED: 'the target answered no',
  TIMEOUT: 'no answer in time',
  INVALID_TARGET: 'the target cannot be used',
};

/** Why this attempt was the last one, in a sentence. */
export function permanentReasonText(a: Attempt): string | null {
  switch (a.permanentReason) {
    case 'PERMANENT_STATUS_CODE':
      return `Not retried: HTTP ${a.statusCode ?? '?'} is one of the policy’s permanent status codes.`;
    case 'PERMANENT_ERROR_KIND':
      return 'Not retried: the handler’s error kind is one of the policy’s permanent error kinds.';
    case 'PERMANENT_ERROR':
      return 'Not retried: the handler or target said retrying cannot help.';
    case 'INVALID_TARGET':
      return 'Not retried: the policy’s target cannot be used (its settings, or an address it does not allow).';
    case 'MAX_ATTEMPTS':
      return `Not retried: attempt ${a.attemptNumber} was the last the policy allows (max attempts).`;
    default:
      return a.outcome === 'PERMANENT_FAILURE' ? 'Not retried: a permanent failure (recorded before reasons were kept).' : null;
  }
}

export function AttemptEntry({ attempt: a, isLatest, retryAt }: { attempt: Attempt; isLatest: boolean; retryAt: string | null }) {
  const permanent = permanentReasonText(a);
  const failed = a.outcome !== 'SUCCEEDED';
  const retried = failed && !permanent ? (isLatest ? (retryAt ? `Will be retried: next attempt ${new Date(retryAt).toLocaleString()}.` : null) : 'Retried: not a permanent failure.') : null;
  const hasDetails = a.target != null || a.requestHeaders != null || a.responseHeaders != null || a.responseBody != null;
  return (
    <div className="attempt" data-testid={`attempt-${a.attemptNumber}`}>
      <span>
        Attempt {a.attemptNumber}: <strong>{a.outcome}</strong>
        {a.statusCode ? ` (HTTP ${a.statusCode})` : ''} in {a.durationMs} ms
        {a.failureKind ? <span className="kind" title={FAILURE_KIND[a.failureKind]}> {a.failureKind}</span> : null}
        {/* "HTTP 422" says nothing the status did not: the response below is the receiver's answer. */}
        {a.errorMessage && a.errorMessage !== `HTTP ${a.statusCode}` ? <span className="muted"> — {a.errorMessage}</span> : null}
      </span>
      {permanent ? <p className="attempt-why permanent" data-testid="permanent-reason">{permanent}</p> : null}
      {retried ? <p className="attempt-why muted">{retried}</p> : null}
      {hasDetails ? (
        <details open={isLatest && failed}>
          <summary>Request and response</summary>
          <div className="exchange">
            <section aria-label={`Attempt ${a.attemptNumber} request`}>
              <h4>Request</h4>
              <p>
                {a.target ?? 'target not recorded'}
                {a.requestBodyBytes != null ? <> · body {a.requestBodyBytes.toLocaleString()} bytes</> : null}
                {a.requestBodySha256 ? <> · <span className="mono" title={`SHA-256 ${a.requestBodySha256}`}>sha256 {a.requestBodySha256.slice(0, 12)}…</span></> : null}
              </p>
              <Headers caption="Request headers" headers={a.requestHeaders} />
            </section>
            <section aria-label={`Attempt ${a.attemptNumber} response`}>
              <h4>Response</h4>
              {a.statusCode == null && a.responseHeaders == null ? (
                <p className="muted">No response{a.failureKind ? `: ${FAILURE_KIND[a.failureKind]}` : ''}.</p>
              ) : (
                <>
                  <p>{a.statusCode != null ? `HTTP ${a.statusCode}` : 'No status'}</p>
                  <Headers caption="Response headers" headers={a.responseHeaders} />
                  <ResponseBody attempt={a} />
                </>
              )}
            </section>
          </div>
        </details>
      ) : null}
    </div>
  );
}

function Headers({ caption, headers }: { caption: string; headers: readonly Header[] | null }) {
  if (!headers) return <p className="muted">{caption}: not recorded.</p>;
  if (headers.length === 0) return <p className="muted">{caption}: none.</p>;
  return (
    <table className="plain-table headers-table">
      <caption>{caption}</caption>
      <tbody>
        {headers.map((h) => (
          <tr key={h.name}><th scope="row" className="mono">{h.name}</th><td className="mono">{h.value}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

function ResponseBody({ attempt: a }: { attempt: Attempt }) {
  const id = useId();
  if (!a.responseBody) return <p className="muted">Empty body.</p>;
  return (
    <>
      <p id={id} className="muted">Response body{a.responseBodyTruncated ? ' (truncated: its first 2,048 bytes)' : ''}</p>
      <pre className="code" tabIndex={0} aria-labelledby={id}>{a.responseBody}</pre>
    </>
  );
}
