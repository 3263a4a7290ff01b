import { createContext, useContext, type ReactNode } from 'react';
import { describeError, type Api } from './api.ts';
import { parseJsonKeepingNumbers } from '../../src/db/exactJson.ts';

export type Role = 'VIEWER' | 'OPERATOR' | 'ADMIN';
const RANK: Record<Role, number> = { VIEWER: 1, OPERATOR: 2, ADMIN: 3 };

export interface Session {
  api: Api;
  name: string;
  role: Role;
}
export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside the signed-in app');
  return session;
}

/** Whether the caller's role allows an action; the server enforces it either way. */
export function useCan(role: Role): boolean {
  return RANK[useSession().role] >= RANK[role];
}

/** Why a button is disabled, for its title. */
export const needs = (role: Role) => `needs the ${role.toLowerCase()} role`;

/** An API error, shown where it happened. */
export function ErrorNote({ error, children }: { error: unknown; children?: ReactNode }) {
  if (!error) return null;
  const { code, message, field } = describeError(error);
  return (
    <div role="alert" className="error-note">
      <strong>{code}</strong> {message}
      {field ? <span className="muted"> (field {field})</span> : null}
      {children}
    </div>
  );
}

/**
 * Why a mutation did not happen, as an Error for ErrorNote: the request's own error, or the
 * MutationError its (single) root field returned; null when it happened.
 */
export function mutationProblem(result: { error?: Error; data?: object | null }): Error | null {
  if (result.error) return result.error;
  const root = result.data ? (Object.values(result.data)[0] as { __typename?: string; message?: string; code?: string } | null) : null;
  if (!root || root.message === undefined || !root.code) return null;
  return Object.assign(new Error(`${root.code}: ${root.message}`), { name: root.__typename ?? 'Error' });
}

const number = new Intl.NumberFormat('en-US');
export const fmt = (n: number) => number.format(n);

/** An editor's text as JSON, or the parser's message. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    // Numbers a double cannot carry stay as typed (see exactFetchExchange.ts).
    return { ok: true, value: parseJsonKeepingNumbers(text) };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  return duration((now - Date.parse(iso)) / 1000) + ' ago';
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status.toLowerCase()}`}>{status}</span>;
}

/**
 * An error group's signature as lazarus_group_signature writes it: the message signature (or the
 * fingerprint), then one line per top stack frame, each starting with "at ".
 */
export function splitSignature(signature: string): { message: string; frames: string[] } {
  const lines = signature.split('\n');
  let first = lines.length;
  while (first > 1 && lines[first - 1]!.startsWith('at ')) first -= 1;
  return { message: lines.slice(0, first).join('\n'), frames: lines.slice(first) };
}

/** An error message as shown: an empty one reads "(empty message)" instead of nothing. */
export const messageText = (message: string) => (message.trim() === '' ? '(empty message)' : message);

export function Loading({ what }: { what: string }) {
  return <p className="muted" aria-busy="true">Loading {what}…</p>;
}
