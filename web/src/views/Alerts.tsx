// Alerts: the rules (every role sees them; admins create, edit, enable or disable, delete and send a
// test alert) and the history of alerts raised with their delivery. Only admins see a rule's whole
// webhook URL (a Slack URL's path is its secret); the others see its host.
import { useState } from 'react';
import { useQuery } from 'urql';
import { graphql } from '../graphql.ts';
import { ago, duration, ErrorNote, fmt, Loading, mutationProblem, needs, useCan, useSession } from '../ui.tsx';
import { AlertHistory } from './AlertHistory.tsx';
import { AlertRuleForm, AlertRulesQuery, triggerOf, type AlertRule } from './AlertRuleForm.tsx';

const SetEnabled = graphql(`mutation SetAlertRuleEnabled($input: UpdateAlertRuleInput!) { updateAlertRule(input: $input) { id enabled } }`);
const Delete = graphql(`mutation DeleteAlertRule($id: ID!) { deleteAlertRule(id: $id) { id } }`);
const SendTest = graphql(`mutation SendTestAlert($ruleId: ID!) { sendTestAlert(ruleId: $ruleId) { id } }`);

export default function Alerts() {
  const isAdmin = useCan('ADMIN');
  const { api, role } = useSession();
  const [result, refetch] = useQuery({ query: AlertRulesQuery, variables: { admin: isAdmin } });
  const [editing, setEditing] = useState<AlertRule | 'new' | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [historyVersion, setHistoryVersion] = useState(0);
  const reload = () => refetch({ requestPolicy: 'network-only' });

  const act = async (run: () => Promise<{ error?: Error; data?: object | null }>, done?: string) => {
    setError(null);
    setNotice(null);
    const problem = mutationProblem(await run());
    if (problem) setError(problem);
    else if (done) setNotice(done);
    reload();
    setHistoryVersion((v) => v + 1);
  };
  const toggle = (r: AlertRule) => act(() => api.urql.mutation(SetEnabled, { input: { id: r.id, enabled: !r.enabled } }).toPromise());
  const remove = (r: AlertRule) => act(() => api.urql.mutation(Delete, { id: r.id }).toPromise(), `Deleted the rule ${r.name}; its alerts stay in the history.`);
  const sendTest = (r: AlertRule) =>
    act(() => api.urql.mutation(SendTest, { ruleId: r.id }).toPromise(), `Test alert sent through ${r.name}: its delivery shows in the history below.`);

  if (result.error) return <div><h1>Alerts</h1><ErrorNote error={result.error} /></div>;
  if (!result.data) return <Loading what="alert rules" />;
  const rules = result.data.alertRules;
  const adminOnly = { disabled: !isAdmin, title: isAdmin ? undefined : needs('ADMIN') };
  return (
    <div>
      <h1>Alerts</h1>
      <p className="muted">
        Each rule sends a signed webhook (or a Slack message) when its trigger fires, at most once per subject per throttle window.
      </p>
      {!isAdmin ? (
        <p role="status" data-testid="alerts-role">Alert rules are changed by admins: your key has the {role.toLowerCase()} role, so you see each rule’s target host, not its URL.</p>
      ) : null}
      <ErrorNote error={error} />
      {notice ? <p role="status" className="preview" data-testid="alerts-notice">{notice}</p> : null}
      <h2>Rules</h2>
      {rules.length === 0 ? <p className="muted">No alert rules yet.</p> : (
        <table className="plain-table" data-testid="alert-rules">
          <thead>
            <tr>
              <th scope="col">Name</th><th scope="col">Trigger</th><th scope="col">Channel</th><th scope="col">Throttle</th>
              <th scope="col">State</th><th scope="col">Updated</th><th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {rules.map((r) => (
              <tr key={r.id} data-testid="alert-rule">
                <td>{r.name}</td>
                <td><span className="kind">{r.trigger}</span> {triggerText(r)}</td>
                <td className="ellipsis">
                  {r.format === 'SLACK' ? 'Slack' : 'Webhook'} → <span className="mono">{r.targetUrl ?? r.targetHost ?? 'unparseable URL'}</span>
                  {r.allowPrivateTarget ? <span className="muted"> (private target allowed)</span> : null}
                </td>
                <td>1 per subject per {windowText(r.windowSeconds)}</td>
                <td><span className={`badge ${r.enabled ? 'status-succeeded' : 'status-discarded'}`}>{r.enabled ? 'enabled' : 'disabled'}</span></td>
                <td title={r.updatedAt}>{ago(r.updatedAt)}{r.updatedBy ? ` by ${r.updatedBy}` : ''}</td>
                <td>
                  <div className="row-actions">
                    <button onClick={() => setEditing(r)} aria-label={`Edit ${r.name}`} {...adminOnly}>Edit</button>
                    <button onClick={() => void toggle(r)} aria-label={`${r.enabled ? 'Disable' : 'Enable'} ${r.name}`} {...adminOnly}>{r.enabled ? 'Disable' : 'Enable'}</button>
                    <button onClick={() => void sendTest(r)} aria-label={`Send test alert through ${r.name}`} {...adminOnly}>Send test alert</button>
                    {deleting === r.id ? (
                      <>
                        <button className="danger" onClick={() => { setDeleting(null); void remove(r); }} aria-label={`Confirm delete of ${r.name}`}>Confirm delete</button>
                        <button onClick={() => setDeleting(null)}>Keep</button>
                      </>
                    ) : <button onClick={() => setDeleting(r.id)} aria-label={`Delete ${r.name}`} {...adminOnly}>Delete</button>}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p><button onClick={() => setEditing('new')} {...adminOnly}>New alert rule</button></p>
      {editing && isAdmin ? (
        <AlertRuleForm key={editing === 'new' ? 'new' : editing.id} rule={editing === 'new' ? null : editing}
          onDone={(saved) => { setEditing(null); if (saved) reload(); }} />
      ) : null}
      <AlertHistory rules={rules} version={historyVersion} />
    </div>
  );
}

function windowText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return duration(seconds);
}

function triggerText(r: AlertRule): string {
  const t = triggerOf(r.trigger);
  return t.unit && r.threshold !== null ? `${t.label} ${fmt(r.threshold)} ${t.unit}` : t.label;
}
