// A retry policy's delivery target: a kind plus that kind's settings. This is the part of a kind the
// write path needs (parse, check, describe); src/workers/targets adds delivery and holds the registry.
// The same parse runs when a policy is saved and before every delivery, so a setting the table
// accepts is a setting the kind can use, and a bad one is a coded error that writes nothing.
import type { z } from 'zod';

/** One setting as the console's form shows it. */
export interface TargetField {
  name: string;
  label: string;
  /** Never returned by the API; the form leaves it empty and an empty field keeps the stored value. */
  isSecret?: boolean;
  isRequired?: boolean;
  placeholder?: string;
}

/** What is known about the policy when a target is checked. */
export interface TargetContext {
  allowPrivateTarget: boolean;
}

/** A problem with one setting: `field` is the setting's name, `reason` a SCREAMING_CASE code. */
export interface TargetProblem {
  field: string;
  reason: string;
  message: string;
}

export interface TargetKindSpec<S = unknown> {
  /** Stored in retry_policies.target_kind: lower-case letters, digits and _. */
  kind: string;
  label: string;
  fields: readonly TargetField[];
  /**
   * The settings a stored target may have, checked before each delivery. Issues on a field become
   * that field's error with `reasons[field]` as reason.
   */
  settings: z.ZodType<S>;
  /** Stricter rules for settings being saved (a minimum secret length, say); default `settings`. */
  input?: z.ZodType<S>;
  reasons?: Readonly<Record<string, string>>;
  /** Checks that need the policy (SSRF); null when fine. */
  check?(settings: S, context: TargetContext): TargetProblem | null;
  /** One line for tables and logs: host and kind only, never a secret or a URL's path. */
  describe(settings: S): string;
  /** The settings an admin's form may show: secrets left out (see `fields[].isSecret`). */
  publicSettings(settings: S): Record<string, unknown>;
}

export type TargetKindSpecs = ReadonlyMap<string, TargetKindSpec<any>>;

export interface Target {
  kind: string;
  settings: Record<string, unknown>;
}

/** The settings as the kind parses them, or the first problem (by the kind's field order). */
export function parseTargetSettings(spec: TargetKindSpec, settings: unknown, context: TargetContext, schema = spec.settings):
  { ok: true; settings: unknown } | { ok: false; problem: TargetProblem } {
  const parsed = schema.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.code === 'unrecognized_keys' ? issue.keys[0]! : String(issue.path[0] ?? '');
    const message = issue.code === 'unrecognized_keys' ? `${field} is not a setting of this kind`
      : issue.code === 'invalid_type' && issue.input === undefined ? `${field} is required` : issue.message;
    return { ok: false, problem: { field, reason: spec.reasons?.[field] ?? 'INVALID_SETTING', message } };
  }
  const problem = spec.check?.(parsed.data, context) ?? null;
  return problem ? { ok: false, problem } : { ok: true, settings: parsed.data };
}

/**
 * The target with its settings as the kind parsed them, or the problem naming `target.kind` or
 * `target.settings.<field>`.
 */
export function parseTarget(kinds: TargetKindSpecs, target: Target, context: TargetContext):
  { ok: true; target: Target } | { ok: false; problem: TargetProblem } {
  const spec = kinds.get(target.kind);
  if (!spec) {
    return { ok: false, problem: { field: 'target.kind', reason: 'UNKNOWN_TARGET_KIND', message: `target kind must be one of ${[...kinds.keys()].join(', ')}` } };
  }
  const result = parseTargetSettings(spec, target.settings, context, spec.input ?? spec.settings);
  if (!result.ok) return { ok: false, problem: { ...result.problem, field: ['target.settings', result.problem.field].filter(Boolean).join('.') } };
  return { ok: true, target: { kind: target.kind, settings: result.settings as Record<string, unknown> } };
}

/** The target's one-line description, or null when it has none or its kind is unknown here. */
export function describeTarget(kinds: TargetKindSpecs, target: Target | null): string | null {
  if (!target) return null;
  const spec = kinds.get(target.kind);
  const parsed = spec?.settings.safeParse(target.settings);
  return spec && parsed?.success ? spec.describe(parsed.data) : null;
}
