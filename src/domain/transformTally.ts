// Patching a batch of payloads and counting the outcomes, shared by a transform's preview, its
// validation pass and its apply batches (src/domain/payloadTransforms.ts, transformBatches.ts).
import { checkPayloadLimits, MAX_PAYLOAD_DEPTH } from '../db/sql/checkPayloadLimits.ts';
import type { Queryable } from '../db/sql/queryable.ts';
import { applyPayloadPatch, TOO_LARGE_REASON, type PatchOutcome, type PayloadPatch } from './payloadPatch.ts';

/** How many ids each failure reason lists. */
export const FAILURE_ID_SAMPLE = 10;

export interface TransformFailure {
  reason: string;
  count: number;
  /** The first FAILURE_ID_SAMPLE ids, ascending. */
  ids: bigint[];
}

export interface Tally {
  matched: number;
  changed: number;
  unchanged: number;
  /** Events the patch did not apply to. */
  failed: number;
  /** Events whose result the payload CHECKs or the patch's size bound refuse (counted in `failed` too). */
  limitFailed: number;
  reasons: Map<string, { count: number; ids: bigint[] }>;
}

export const newTally = (): Tally => ({ matched: 0, changed: 0, unchanged: 0, failed: 0, limitFailed: 0, reasons: new Map() });

function fail(tally: Tally, id: bigint, reason: string): void {
  tally.failed++;
  const entry = tally.reasons.get(reason) ?? { count: 0, ids: [] };
  entry.count++;
  if (entry.ids.length < FAILURE_ID_SAMPLE) entry.ids.push(id);
  tally.reasons.set(reason, entry);
}

export type Patched = { id: bigint; outcome: PatchOutcome };

/**
 * Patches each payload (given as payload::text), checks the changed results against the payload
 * CHECKs in SQL (the CHECKs' own expressions), and counts every outcome. A result the CHECKs would
 * refuse comes back as failed. Results are in the batch's order.
 */
export async function patchBatch(db: Queryable, patch: PayloadPatch, batch: { id: bigint; payloadText: string }[], tally: Tally): Promise<Patched[]> {
  const results: Patched[] = batch.map((c) => ({ id: c.id, outcome: applyPayloadPatch(patch, c.payloadText) }));
  const changed = results.filter((r) => r.outcome.kind === 'changed');
  const violations = await checkPayloadLimits(db, {
    ids: changed.map((r) => r.id),
    payloadJsons: changed.map((r) => (r.outcome as { afterJson: string }).afterJson),
  });
  const refused = new Map(violations.map((v) => [v.id, v]));
  for (const r of results) {
    tally.matched++;
    const v = refused.get(r.id);
    if (v) {
      tally.limitFailed++;
      const reason = v.tooDeep
        ? `the result would be nested deeper than ${MAX_PAYLOAD_DEPTH} levels (payload depth CHECK)`
        : TOO_LARGE_REASON;
      fail(tally, r.id, reason);
      r.outcome = { kind: 'failed', reason, breaksLimits: true };
    } else if (r.outcome.kind === 'failed') {
      if (r.outcome.breaksLimits) tally.limitFailed++;
      fail(tally, r.id, r.outcome.reason);
    }
    else if (r.outcome.kind === 'unchanged') tally.unchanged++;
    else tally.changed++;
  }
  return results;
}

/** The failures by reason, most frequent first, with the failures recorded before merged in. */
export function failureList(tally: Tally, earlier: TransformFailure[] = []): TransformFailure[] {
  const merged = new Map(earlier.map((f) => [f.reason, { count: f.count, ids: [...f.ids] }]));
  for (const [reason, e] of tally.reasons) {
    const m = merged.get(reason) ?? { count: 0, ids: [] };
    m.count += e.count;
    m.ids = [...m.ids, ...e.ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, FAILURE_ID_SAMPLE);
    merged.set(reason, m);
  }
  return [...merged.entries()]
    .map(([reason, e]) => ({ reason, count: e.count, ids: e.ids }))
    .sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
}

/** Failures as stored in transforms.failures (ids as strings) and back. */
export const failuresJson = (failures: TransformFailure[]): string =>
  JSON.stringify(failures.map((f) => ({ reason: f.reason, count: f.count, ids: f.ids.map(String) })));

export function parseFailures(json: unknown): TransformFailure[] {
  if (!Array.isArray(json)) return [];
  return json.map((f: { reason: string; count: number; ids: string[] }) => ({ reason: f.reason, count: f.count, ids: f.ids.map(BigInt) }));
}
