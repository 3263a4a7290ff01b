// Alert history: the alerts raised, newest first, with what became of their delivery, filtered by
// rule and delivery state (both in the URL). There is no alert subscription: the list is re-read
// every second while a delivery is under way or due, else every 5 s. Alerts a rule's throttle
// held back were never raised, so they are not in the history.
import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import { graphql, type ResultOf, type VariablesOf } from '../graphql.ts';
import { ago, duration, ErrorNote, Loading, messageText, splitSignature, StatusBadge } from '../ui.tsx';
import type { AlertRule } from './AlertRuleForm.tsx';

const AlertsQuery = graphql(`
  query Alerts($filter: AlertFilter, $first: Int) {
    alerts(filter: $filter, first: $first) {
      edges { node { id rule { id } ruleName trigger subject errorGroup { id eventType errorKind signature } summary createdAt deliveryStatus attempts nextAttemptAt lastError lastStatusCode deliveredAt } }
      pageInfo { hasNextPage }
    }
  }
`);
type Alert = ResultOf<typeof AlertsQuery>['alerts']['edges'][number]['node'];
type DeliveryStatus = Alert['deliveryStatus'];
const DELIVERY_STATUSES: DeliveryStatus[] = ['PENDING', 'DELIVERING', 'DELIVERED', 'FAILED', 'SUPPRESSED'];
const PAGE = 50;
const MAX_SHOWN = 500;

/** `version` changes when the page did something that raises or changes alerts: re-read at once. */
export function AlertHistory({ rules, version }: { rules: readonly AlertRule[]; version: number }) {
  const [params, setParams] = useSearchParams();
  const ruleId = params.get('rule');
  const statuses = (params.get('delivery') ?? '').split(',').filter((s): s is DeliveryStatus => (DELIVERY_STATUSES as string[]).includes(s));
  const [shown, setShown] = useState(PAGE);
  const filter: VariablesOf<typeof AlertsQuery>['filter'] = {
    ...(ruleId ? { ruleId } : {}),
    ...(statuses.length ? { deliveryStatuses: statuses } : {}),
  };
  const [result, refetch] = useQuery({ query: AlertsQuery, variables: { filter, first: shown } });
  const alerts = result.data?.alerts.edges.map((e) => e.node);
  // Fast only while a delivery is under way or due within seconds: an alert backing off for
  // minutes against a dead receiver should not keep the page polling every second.
  const inFlight = alerts?.some((a) => a.deliveryStatus === 'DELIVERING' || (a.nextAttemptAt !== null && Date.parse(a.nextAttemptAt) < Date.now() + 5_000)) ?? false;
  useEffect(() => {
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), inFlight ? 1_000 : 5_000);
    return () => clearInterval(timer);
  }, [inFlight, refetch]);
  useEffect(() => {
    if (version > 0) refetch({ requestPolicy: 'network-only' });
  }, [version, refetch]);

  const set = (name: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next);
    setShown(PAGE);
  };
  const toggle = (s: DeliveryStatus) => set('delivery', (statuses.includes(s) ? statuses.filter((x) => x !== s) : [...statuses, s]).join(','));
  return (
    <section aria-labelledby="alert-history">
      <h2 id="alert-history">Alert history</h2>
      <div className="toolbar">
        <label>Rule{' '}
          <select value={ruleId ?? ''} onChange={(e) => set('rule', e.target.value)}>
            <option value="">every rule</option>
            {rules.map((r) => <option key={r.id} value={r.id}>{r.name}</option>)}
          </select>
        </label>
        <fieldset className="inline">
          <legend>Delivery</legend>
          {DELIVERY_STATUSES.map((s) => (
            <label key={s} className="check"><input type="checkbox" checked={statuses.includes(s)} onChange={() => toggle(s)} /> {s.toLowerCase()}</label>
          ))}
        </fieldset>
        <span className="spacer" />
        <span className="muted">Refreshed every {inFlight ? 'second while a delivery is under way' : '5 seconds'}.</span>
      </div>
      <ErrorNote error={result.error} />
      {!alerts ? <Loading what="alerts" /> : alerts.length === 0 ? <p className="muted" data-testid="no-alerts">No alerts{ruleId || statuses.length ? ' match these filters' : ' yet'}.</p> : (
        <table className="plain-table" data-testid="alert-history">
          <thead>
            <tr><th scope="col">Raised</th><th scope="col">Rule</th><th scope="col">Trigger</th><th scope="col">Subject</th><th scope="col">Summary</th><th scope="col">Delivery</th></tr>
          </thead>
          <tbody>
            {alerts.map((a) => <AlertRow key={a.id} alert={a} />)}
          </tbody>
        </table>
      )}
      {result.data?.alerts.pageInfo.hasNextPage && shown < MAX_SHOWN ? (
        <p><button onClick={() => setShown(shown + PAGE)}>Show {PAGE} older alerts</button></p>
      ) : null}
    </section>
  );
}

function AlertRow({ alert: a }: { alert: Alert }) {
  return (
    <tr data-testid="alert-row">
      <td title={a.createdAt}>{ago(a.createdAt)}</td>
      <td>{a.rule ? <Link to={`/alerts?rule=${a.rule.id}`}>{a.ruleName}</Link> : <>{a.ruleName} <span className="muted">(deleted)</span></>}</td>
      <td><span className="kind">{a.trigger}</span></td>
      <td><Subject alert={a} /></td>
      <td>{a.summary}</td>
      <td data-testid="alert-delivery"><Delivery alert={a} /></td>
    </tr>
  );
}

/** A group reads as its error and links to it; `redrive:<id>` links to its page; `global` and `test` are plain. */
function Subject({ alert: { subject, errorGroup: g } }: { alert: Alert }) {
  const [kind, id] = subject.split(':');
  if (g) {
    return (
      <Link to={`/groups/${g.id}`} title={`error group ${g.id}`}>
        <span className="kind">{g.errorKind}</span> {g.eventType}: {messageText(splitSignature(g.signature).message)}
      </Link>
    );
  }
  if (kind === 'group' && id) return <Link to={`/groups/${id}`}>error group {id}</Link>;
  if (kind === 'redrive' && id) return <Link to={`/redrives/${id}`}>redrive {id}</Link>;
  return <span className="mono">{subject}</span>;
}

function Delivery({ alert: a }: { alert: Alert }) {
  const attempts = `${a.attempts} attempt${a.attempts === 1 ? '' : 's'}`;
  return (
    <>
      <StatusBadge status={a.deliveryStatus} />{' '}
      {a.deliveryStatus === 'DELIVERED' ? <span title={a.deliveredAt ?? undefined}>{ago(a.deliveredAt)}, {attempts}</span> : <span>{attempts}</span>}
      {a.deliveryStatus === 'PENDING' && a.attempts > 0 && a.nextAttemptAt ? <span title={a.nextAttemptAt}>; next {inText(a.nextAttemptAt)}</span> : null}
      {a.lastError && a.deliveryStatus !== 'DELIVERED' ? (
        <div className="field-error">last error: {a.lastError}{a.lastStatusCode && !a.lastError.includes(String(a.lastStatusCode)) ? ` (HTTP ${a.lastStatusCode})` : ''}</div>
      ) : null}
    </>
  );
}

function inText(iso: string): string {
  const seconds = (Date.parse(iso) - Date.now()) / 1000;
  return seconds < 1 ? 'now' : `in ${duration(seconds)}`;
}
