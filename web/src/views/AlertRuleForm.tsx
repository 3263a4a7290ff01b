// Create or edit an alert rule (admins only). The API validates the whole rule; its refusal (coded,
// with the field) is shown beside that field, and nothing is saved.
import { useState, type FormEvent } from 'react';
import { describeError } from '../api.ts';
import { graphql, type ResultOf, type VariablesOf } from '../graphql.ts';
import { useSession } from '../ui.tsx';

export const AlertRulesQuery = graphql(`
  query AlertRules($admin: Boolean!) {
    alertRules {
      id name trigger threshold windowSeconds enabled format allowPrivateTarget targetHost targetUrl @include(if: $admin)
      updatedAt updatedBy
    }
  }
`);
const Create = graphql(`mutation CreateAlertRule($input: CreateAlertRuleInput!) { createAlertRule(input: $input) { id } }`);
const Update = graphql(`mutation UpdateAlertRule($input: UpdateAlertRuleInput!) { updateAlertRule(input: $input) { id } }`);

export type AlertRule = ResultOf<typeof AlertRulesQuery>['alertRules'][number];
type Trigger = AlertRule['trigger'];
type Format = AlertRule['format'];

export const TRIGGERS: { value: Trigger; label: string; unit?: string }[] = [
  { value: 'NEW_GROUP', label: 'a new error group appears' },
  { value: 'REGRESSION', label: 'a resolved error group fails again' },
  { value: 'REDRIVE_PAUSED', label: 'a redrive pauses itself (its guard)' },
  { value: 'BACKLOG', label: 'pending events above', unit: 'events' },
  { value: 'OLDEST_PENDING_AGE', label: 'the oldest due pending event waits longer than', unit: 'seconds' },
  { value: 'EXHAUSTED_RATE', label: 'events exhausted in the last minute above', unit: 'per minute' },
];
export const triggerOf = (t: Trigger) => TRIGGERS.find((x) => x.value === t)!;

export function AlertRuleForm({ rule, onDone }: { rule: AlertRule | null; onDone: (saved: boolean) => void }) {
  const { api } = useSession();
  const [values, setValues] = useState<Record<string, string>>(() => ({
    name: rule?.name ?? '',
    trigger: rule?.trigger ?? 'NEW_GROUP',
    threshold: rule?.threshold == null ? '' : String(rule.threshold),
    windowSeconds: String(rule?.windowSeconds ?? 900),
    targetUrl: rule?.targetUrl ?? '',
    format: rule?.format ?? 'STANDARD',
    signingSecret: '',
  }));
  const [flags, setFlags] = useState({ enabled: rule?.enabled ?? true, allowPrivateTarget: rule?.allowPrivateTarget ?? false });
  const [problem, setProblem] = useState<ReturnType<typeof describeError> | null>(null);
  const isMetric = triggerOf(values.trigger as Trigger).unit !== undefined;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    const common = {
      name: values.name!,
      trigger: values.trigger as Trigger,
      threshold: isMetric && values.threshold !== '' ? Number(values.threshold) : null,
      windowSeconds: Number(values.windowSeconds),
      targetUrl: values.targetUrl!,
      format: values.format as Format,
      ...flags,
    };
    const secret = values.signingSecret === '' ? undefined : values.signingSecret;
    const r = rule
      ? await api.urql.mutation(Update, { input: { id: rule.id, ...common, signingSecret: secret } satisfies VariablesOf<typeof Update>['input'] }).toPromise()
      : await api.urql.mutation(Create, { input: { ...common, signingSecret: secret ?? '' } satisfies VariablesOf<typeof Create>['input'] }).toPromise();
    if (r.error) return setProblem(describeError(r.error));
    onDone(true);
  };
  const fieldError = (name: string) =>
    problem?.field === name ? <span id={`alert-${name}-error`} role="alert" className="field-error"><strong>{problem.reason ?? problem.code}</strong> {problem.message}</span> : null;
  const invalid = (name: string) => ({
    'aria-invalid': problem?.field === name || undefined,
    'aria-describedby': problem?.field === name ? `alert-${name}-error` : undefined,
  });
  const input = (name: string, label: string, type = 'text', hint?: string) => (
    <label>
      {label}
      <input name={name} type={type} value={values[name] ?? ''} onChange={(e) => setValues({ ...values, [name]: e.target.value })} placeholder={hint} {...invalid(name)} />
      {fieldError(name)}
    </label>
  );
  const unit = triggerOf(values.trigger as Trigger).unit;
  return (
    <form className="policy-form" onSubmit={submit} aria-label={rule ? `Edit the alert rule ${rule.name}` : 'New alert rule'}>
      <h2>{rule ? `Edit ${rule.name}` : 'New alert rule'}</h2>
      {input('name', 'Name')}
      <label>
        When
        <select name="trigger" value={values.trigger} onChange={(e) => setValues({ ...values, trigger: e.target.value })} {...invalid('trigger')}>
          {TRIGGERS.map((t) => <option key={t.value} value={t.value}>{t.value}: {t.label}{t.unit ? ' …' : ''}</option>)}
        </select>
        {fieldError('trigger')}
      </label>
      {isMetric ? input('threshold', `Threshold (${unit})`, 'number') : null}
      {input('windowSeconds', 'Throttle: at most one alert per subject in (seconds)', 'number')}
      {input('targetUrl', 'Webhook URL', 'text', 'https://hooks.slack.com/services/…')}
      <label>
        Body
        <select name="format" value={values.format} onChange={(e) => setValues({ ...values, format: e.target.value })}>
          <option value="STANDARD">STANDARD: the alert as JSON</option>
          <option value="SLACK">SLACK: {'{ "text": … }'}</option>
        </select>
      </label>
      <label>
        {rule ? 'Signing secret (set; type to replace)' : 'Signing secret (required)'}
        <input
          name="signingSecret" type="password" autoComplete="off" value={values.signingSecret} required={!rule} minLength={16} maxLength={500}
          onChange={(e) => setValues({ ...values, signingSecret: e.target.value })} {...invalid('signingSecret')}
          aria-describedby={[problem?.field === 'signingSecret' ? 'alert-signingSecret-error' : null, 'alert-secret-hint'].filter(Boolean).join(' ')}
        />
        <span id="alert-secret-hint" className="hint">
          16–500 characters, or whsec_ and base64. Every alert is signed (Standard Webhooks), Slack's too: Slack does not check the signature, so a generated one will do.
        </span>
        {fieldError('signingSecret')}
      </label>
      <div className="secret-tools"><button type="button" onClick={() => setValues({ ...values, signingSecret: generatedSecret() })}>Generate a secret</button></div>
      <label className="check"><input type="checkbox" checked={flags.enabled} onChange={(e) => setFlags({ ...flags, enabled: e.target.checked })} /> enabled</label>
      <label className="check"><input type="checkbox" checked={flags.allowPrivateTarget} onChange={(e) => setFlags({ ...flags, allowPrivateTarget: e.target.checked })} /> allow a private-network target</label>
      {problem && !(problem.field && problem.field in values) ? (
        <p role="alert" className="error-note"><strong>{problem.code}</strong> {problem.field ? `${problem.field}: ` : ''}{problem.message}</p>
      ) : null}
      <div className="actions">
        <button type="submit">Save alert rule</button>
        <button type="button" onClick={() => onDone(false)}>Cancel</button>
      </div>
    </form>
  );
}

/** A Standard Webhooks secret: whsec_ and 24 random bytes in base64. */
function generatedSecret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;
}
