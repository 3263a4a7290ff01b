import type { Queryable } from './queryable.ts';
import { runSql } from '../runSql.ts';
import { Prisma } from '../../generated/prisma/client.ts';

/** The payload CHECKs of dead_letters (migrations 20261121000000_init and 20261124100000_payload_depth). */
export const MAX_PAYLOAD_BYTES = 262_144;
export const MAX_PAYLOAD_DEPTH = 100;

export interface PayloadLimitViolation {
  id: bigint;
  /** octet_length(payload::text), as the size CHECK measures it. */
  bytes: number;
  tooDeep: boolean;
}

/**
 * Which of the candidate payloads the table's CHECKs would refuse, measured exactly as the CHECKs
 * measure them (so a write after this check cannot fail on them). Writes nothing.
 */
export async function checkPayloadLimits(db: Queryable, p: { ids: bigint[]; payloadJsons: string[] }): Promise<PayloadLimitViolation[]> {
  if (p.ids.length === 0) return [];
  const rows = await runSql<{ id: bigint; bytes: number; too_deep: boolean }>(db, Prisma.sql`
    select c.id, c.bytes, c.too_deep from (
      select e.id, octet_length(e.payload::text) as bytes, jsonb_path_exists(e.payload, 'strict $.**{101}') as too_deep
        from unnest(${p.ids.map(String)}::bigint[], ${p.payloadJsons}::jsonb[]) as e(id, payload)) c
     where c.bytes > ${MAX_PAYLOAD_BYTES}::int or c.too_deep
     order by c.id`);
  return rows.map((r) => ({ id: r.id, bytes: r.bytes, tooDeep: r.too_deep }));
}
