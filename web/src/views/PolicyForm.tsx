// The retry policy form. It saves what it shows: every field shows its default (the "*" policy's
// value; for "*" itself, its current one), and a field left blank saves that default, never 0 or
// an empty list. "unlimited" and "none" say no limit and an empty list explicitly. A save that
// would let held events go (a target where there was none, a type no longer ordered) says how
// many first, and offers to release them as a ramped redrive (the default above the redrive
// threshold) or at once, or to save the type paused instead (release on save).
import { useState, type FormEvent, type ReactNode } from 'react';
import { useNavigate } from 'react-router';
import { describeError } from '../api.ts';
import { ERROR_KINDS } from '../filters.ts';
import { graphql, type VariablesOf } from '../graphql.ts';
import { HELD_LABEL, type HeldReason } from '../held.tsx';
import { fmt, useSession } from '../ui.tsx';
import type { Policy, TargetKind } from './policiesQuery.ts';

const Upsert = graphql(`mutation UpsertPolicy($input: UpsertRetryPolicyInput!) {
  upsertRetryPolicy(input: $input) { eventType heldRelease { count mode redriveId } }
}`);
const HeldCounts = graphql(`query PolicyHeldCounts { heldEventCounts { eventType policyEventType reason count } redriveSettings { threshold ratePerSecond } }`);

type Input = VariablesOf<typeof Upsert>['input'];
type ReleaseMode = NonNullable<Input['release']>;
type ErrorKind = NonNullable<Input['permanentErrorKinds']>[number];
type Problem = { field?: string; message: string; code: string };
type Numeric = 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs' | 'timeoutMs';

const NUMBERS: { name: Numeric; label: string }[] = [
  { name: 'maxAttempts', label: 'Max attempts' },
  { name: 'baseDelayMs', label: 'Base delay (ms)' },
  { name: 'maxDelayMs', label: 'Max delay (ms)' },
  { name: 'timeoutMs', label: 'Timeout (ms)' },
];
const UNLIMITED = 'unlimited';
const NONE = 'none';

const concurrencyText = (n: number | null) => (n == null ? UNLIMITED : String(n));
const listText = (list: readonly (string | number)[]) => (list.length ? list.join(', ') : NONE);

/** The form's values for a kind's settings: the stored ones for the stored kind, secrets always empty. */
function settingValues(kind: TargetKind | undefined, target: Policy['target']): Record<string, string> {
  const stored = (target && target.kind === kind?.kind ? target.settings : null) as Record<string, unknown> | null;
  return Object.fromEntries((kind?.fields ?? []).map((f) => [f.name, f.isSecret || stored?.[f.name] == null ? '' : String(stored[f.name])]));
}

/** What a text field means: its default when blank, else the parsed value or why it cannot be read. */
function parseList<T>(text: string, fallback: T[], item: (s: string) => T | null, field: string, what: string): T[] | Problem {
  const t = text.trim();
  if (t === '') return fallback;
  if (t.toLowerCase() === NONE) return [];
  const parts = t.split(',').map((s) => s.trim()).filter(Boolean);
  const values = parts.map(item);
  const bad = parts.find((_, i) => values[i] === null);
  return bad === undefined ? (values as T[]) : { field, code: 'BAD_USER_INPUT', message: `"${bad}" is not ${what}; leave it blank for the default or write "${NONE}"` };
}
const isProblem = (v: unknown): v is Problem => typeof v === 'object' && v !== null && 'message' in v && 'code' in v;

interface Release {
  count: number;
  byReason: Partial<Record<HeldReason, number>>;
  /** Above it, a ramped release is the default. */
  threshold: number;
  ratePerSecond: number;
}

export function PolicyForm({ policy, defaults, kinds, onDone }: {
  policy: Policy | null;
  /** The "*" policy: what a blank field saves. */
  defaults: Policy;
  kinds: readonly TargetKind[];
  onDone: () => void;
}) {
  const { api } = useSession();
  const navigate = useNavigate();
  const isDefaultPolicy = policy?.eventType === '*';
  const [values, setValues] = useState<Record<string, string>>(() => ({
    eventType: policy?.eventType ?? '',
    maxAttempts: policy ? String(policy.maxAttempts) : '',
    backoff: policy?.backoff ?? '',
    baseDelayMs: policy ? String(policy.baseDelayMs) : '',
    maxDelayMs: policy ? String(policy.maxDelayMs) : '',
    timeoutMs: policy ? String(policy.timeoutMs) : '',
    concurrency: policy ? concurrencyText(policy.concurrency) : '',
    permanentStatusCodes: policy ? listText(policy.permanentStatusCodes) : '',
    permanentErrorKinds: policy ? listText(policy.permanentErrorKinds) : '',
  }));
  const [targetKind, setTargetKind] = useState(policy?.target?.kind ?? '');
  const kind = kinds.find((k) => k.kind === targetKind);
  const [settings, setSettings] = useState(() => settingValues(kind, policy?.target ?? null));
  const chooseKind = (name: string) => {
    setTargetKind(name);
    setSettings(settingValues(kinds.find((k) => k.kind === name), policy?.target ?? null));
  };
  const [flags, setFlags] = useState({
    ordered: (policy ?? defaults).ordered,
    allowPrivateTarget: (policy ?? defaults).allowPrivateTarget,
  });
  const [problem, setProblem] = useState<Problem | null>(null);
  const [release, setRelease] = useState<{ input: Input; release: Release } | null>(null);
  const [mode, setMode] = useState<ReleaseMode>('AT_ONCE');

  // What blank saves: for "*" its own current value, else the "*" policy's.
  const base = isDefaultPolicy ? policy! : defaults;
  const defaultText: Record<string, string> = {
    maxAttempts: String(base.maxAttempts),
    backoff: base.backoff,
    baseDelayMs: String(base.baseDelayMs),
    maxDelayMs: String(base.maxDelayMs),
    timeoutMs: String(base.timeoutMs),
    concurrency: concurrencyText(base.concurrency),
    permanentStatusCodes: listText(base.permanentStatusCodes),
    permanentErrorKinds: listText(base.permanentErrorKinds),
  };

  /** The input the form shows, or the first value it cannot read. */
  const inputOf = (): Input | Problem => {
    const numbers: Partial<Record<Numeric, number>> = {};
    for (const { name } of NUMBERS) {
      const text = values[name]!.trim();
      if (text === '') numbers[name] = base[name];
      else if (/^-?\d+$/.test(text)) numbers[name] = Number(text);
      else return { field: name, code: 'BAD_USER_INPUT', message: `${name} must be a whole number; leave it blank for the default (${defaultText[name]})` };
    }
    const c = values.concurrency!.trim().toLowerCase();
    if (c !== '' && c !== UNLIMITED && !/^-?\d+$/.test(c)) {
      return { field: 'concurrency', code: 'BAD_USER_INPUT', message: `concurrency must be a whole number or "${UNLIMITED}"; leave it blank for the default` };
    }
    const concurrency = c === '' ? base.concurrency : c === UNLIMITED ? null : Number(c);
    const codes = parseList(values.permanentStatusCodes!, [...base.permanentStatusCodes],
      (s) => (/^\d+$/.test(s) ? Number(s) : null), 'permanentStatusCodes', 'an HTTP status code');
    if (isProblem(codes)) return codes;
    const errorKinds = parseList(values.permanentErrorKinds!, [...base.permanentErrorKinds],
      (s) => ((ERROR_KINDS as readonly string[]).includes(s.toUpperCase()) ? (s.toUpperCase() as ErrorKind) : null),
      'permanentErrorKinds', `an error kind (${ERROR_KINDS.join(', ')})`);
    if (isProblem(errorKinds)) return errorKinds;
    return {
      eventType: values.eventType!.trim(),
      ...numbers,
      backoff: (values.backoff || base.backoff) as Input['backoff'],
      concurrency,
      // An empty secret keeps the stored one; an empty plain setting removes it. A stored kind this
      // server does not list is left as it is.
      target: targetKind === '' ? null : !kind ? undefined : {
        kind: targetKind,
        settings: Object.fromEntries(kind.fields.filter((f) => !(f.isSecret && settings[f.name] === ''))
          .map((f) => [f.name, settings[f.name] === '' ? null : settings[f.name]])),
      },
      permanentStatusCodes: codes,
      permanentErrorKinds: errorKinds,
      ...flags,
    };
  };

  /**
   * Held events this save lets go, from a fresh count: those of the types the policy governs whose
   * every hold is lifted by it (not paused, a target, and for a blocked key no longer ordered). A type
   * with no target whose keys are also blocked counts whole: its blocked keys still wait.
   */
  const releasedBy = async (input: Input): Promise<Release> => {
    const paused = (policy ?? defaults).paused;
    const hasTarget = targetKind !== '';
    const r = await api.urql.query(HeldCounts, {}, { requestPolicy: 'network-only' }).toPromise();
    const settings = r.data?.redriveSettings;
    const release: Release = { count: 0, byReason: {}, threshold: settings?.threshold ?? 0, ratePerSecond: settings?.ratePerSecond ?? 0 };
    for (const c of r.data?.heldEventCounts ?? []) {
      if (c.reason === 'RELEASING') continue; // already being released by a redrive
      const governed = c.eventType === input.eventType || (input.eventType === '*' && c.policyEventType === '*');
      const lifted = !paused && hasTarget && (c.reason !== 'BLOCKED_KEY' || !input.ordered);
      if (!governed || !lifted) continue;
      release.count += c.count;
      release.byReason[c.reason] = (release.byReason[c.reason] ?? 0) + c.count;
    }
    return release;
  };

  const save = async (input: Input) => {
    const r = await api.urql.mutation(Upsert, { input }).toPromise();
    if (r.error) {
      setRelease(null);
      return setProblem(describeError(r.error));
    }
    const redriveId = r.data?.upsertRetryPolicy.heldRelease?.redriveId;
    if (redriveId) return navigate(`/redrives/${redriveId}`);
    onDone();
  };
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setProblem(null);
    const input = inputOf();
    if (isProblem(input)) return setProblem(input);
    const released = await releasedBy(input);
    if (released.count > 0) {
      setMode(released.count > released.threshold ? 'RAMPED' : 'AT_ONCE');
      return setRelease({ input, release: released });
    }
    await save(input);
  };

  const hintId = (name: string) => `${name}-default`;
  const describedBy = (name: string) => [hintId(name), problem?.field === name ? `${name}-error` : null].filter(Boolean).join(' ') || undefined;
  const fieldError = (name: string) =>
    problem?.field === name ? <span id={`${name}-error`} role="alert" className="field-error">{problem.message}</span> : null;
  const defaultHint = (name: string, extra?: ReactNode) => (
    <span id={hintId(name)} className="hint">
      {isDefaultPolicy ? 'blank keeps' : 'blank saves the default'} {defaultText[name]}{extra}
    </span>
  );
  const input = (name: string, label: string, value: string, onChange: (value: string) => void, opts: { type?: string; hint?: ReactNode; placeholder?: string | null; numeric?: boolean } = {}) => (
    <label key={name}>
      {label}
      <input name={name} type={opts.type ?? 'text'} value={value} onChange={(e) => onChange(e.target.value)}
        inputMode={opts.numeric ? 'numeric' : undefined}
        aria-invalid={problem?.field === name || undefined} aria-describedby={opts.hint ? describedBy(name) : problem?.field === name ? `${name}-error` : undefined}
        readOnly={name === 'eventType' && policy !== null} placeholder={opts.placeholder ?? undefined} />
      {opts.hint}
      {fieldError(name)}
    </label>
  );
  const field = (name: string, label: string, opts: { numeric?: boolean; extra?: ReactNode } = {}) =>
    input(name, label, values[name] ?? '', (value) => setValues({ ...values, [name]: value }),
      { hint: defaultHint(name, opts.extra), placeholder: defaultText[name], numeric: opts.numeric });
  // Errors in a setting name it `target.settings.<name>`, which is also its input's name.
  const settingName = (name: string) => `target.settings.${name}`;
  const isShownInline = (name: string) =>
    name in values || (kind?.fields ?? []).some((f) => settingName(f.name) === name) || name === 'target.kind';
  const who = release?.input.eventType === '*' ? 'every type without a policy of its own' : release?.input.eventType;
  return (
    <form className="policy-form" onSubmit={submit} aria-label={policy ? `Edit the ${policy.eventType} policy` : 'New policy'} noValidate>
      <h2>{policy ? `Edit ${policy.eventType}` : 'New policy'}</h2>
      {input('eventType', 'Event type', values.eventType ?? '', (value) => setValues({ ...values, eventType: value }))}
      {NUMBERS.map((n) => field(n.name, n.label, { numeric: true }))}
      <label>
        Backoff
        <select name="backoff" value={values.backoff} onChange={(e) => setValues({ ...values, backoff: e.target.value })} aria-describedby={hintId('backoff')}>
          <option value="">Default ({defaultText.backoff})</option>
          <option>EXPONENTIAL</option><option>LINEAR</option><option>FIXED</option>
        </select>
        {defaultHint('backoff')}
      </label>
      {field('concurrency', 'Concurrency (in flight)', { numeric: true, extra: `; "${UNLIMITED}" for no limit` })}
      <label>
        Delivery target
        <select name="target.kind" value={targetKind} onChange={(e) => chooseKind(e.target.value)}
          aria-invalid={problem?.field === 'target.kind' || undefined} aria-describedby={problem?.field === 'target.kind' ? 'target.kind-error' : undefined}>
          <option value="">None (in-process handler, else held)</option>
          {kinds.map((k) => <option key={k.kind} value={k.kind}>{k.label}</option>)}
        </select>
        {fieldError('target.kind')}
      </label>
      {kind?.fields.map((f) => {
        const isSet = f.isSecret && policy?.target?.kind === kind.kind && policy.target.secretsSet.includes(f.name);
        return input(settingName(f.name), isSet ? `${f.label} (set; type to replace)` : f.label, settings[f.name] ?? '',
          (value) => setSettings({ ...settings, [f.name]: value }), { type: f.isSecret ? 'password' : 'text', placeholder: f.placeholder });
      })}
      {field('permanentStatusCodes', 'Permanent HTTP status codes', { extra: `; "${NONE}" retries every status` })}
      {field('permanentErrorKinds', 'Permanent error kinds', { extra: `; of ${ERROR_KINDS.join(', ')}` })}
      <label className="check"><input type="checkbox" name="ordered" checked={flags.ordered} onChange={(e) => setFlags({ ...flags, ordered: e.target.checked })} /> ordered per ordering key</label>
      <label className="check"><input type="checkbox" name="allowPrivateTarget" checked={flags.allowPrivateTarget} onChange={(e) => setFlags({ ...flags, allowPrivateTarget: e.target.checked })} /> allow a private-network target</label>
      {problem && !problem.field ? <p role="alert" className="error-note"><strong>{problem.code}</strong> {problem.message}</p> : null}
      {problem?.field && !isShownInline(problem.field) ? <p role="alert" className="error-note"><strong>{problem.code}</strong> {problem.field}: {problem.message}</p> : null}
      {release ? (
        <div role="alertdialog" aria-labelledby="release-title" aria-describedby="release-text" className="warning release-on-save" data-testid="release-on-save">
          <h3 id="release-title">Release on save: {fmt(release.release.count)} held event{release.release.count === 1 ? '' : 's'}</h3>
          <p id="release-text">
            This save lets go {fmt(release.release.count)} held event{release.release.count === 1 ? '' : 's'} of {who} (
            {Object.entries(release.release.byReason).map(([reason, n]) => `${fmt(n)} ${HELD_LABEL[reason as HeldReason]}`).join(', ')}).
            Saved paused, they stay held until you resume the type.
          </p>
          <fieldset className="release-mode">
            <legend>Release them</legend>
            <label className="check">
              <input type="radio" name="release" value="RAMPED" checked={mode === 'RAMPED'} onChange={() => setMode('RAMPED')} />
              {' '}as a ramped redrive{release.release.count > release.release.threshold ? ' (default: more than ' + fmt(release.release.threshold) + ')' : ''}
              <span className="hint">from {fmt(Math.max(1, Math.floor(release.release.ratePerSecond / 10)))} up to {fmt(release.release.ratePerSecond)} events a second over a minute; shown on Redrives, where it can be paused</span>
            </label>
            <label className="check">
              <input type="radio" name="release" value="AT_ONCE" checked={mode === 'AT_ONCE'} onChange={() => setMode('AT_ONCE')} />
              {' '}at once{release.release.count > release.release.threshold ? '' : ' (default: ' + fmt(release.release.threshold) + ' or fewer)'}
              <span className="hint">all due now, as fast as the retry loop and the type’s concurrency allow</span>
            </label>
          </fieldset>
          <div className="actions">
            <button type="button" onClick={() => void save({ ...release.input, release: mode })}>
              {mode === 'RAMPED' ? `Save and release ${fmt(release.release.count)} ramped` : `Save and release ${fmt(release.release.count)} now`}
            </button>
            <button type="button" onClick={() => void save({ ...release.input, paused: true })}>Save paused</button>
            <button type="button" onClick={() => setRelease(null)} autoFocus>Back to the form</button>
          </div>
        </div>
      ) : null}
      <div className="actions">
        <button type="submit" disabled={release !== null}>Save policy</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}
