// Redirects of redrives to source (source_redirects): what would go back to `kind:fromPlace` goes to
// `toPlace` (through `toBridge`'s broker when set) instead.
import type { Db } from '../createDb.ts';

export function findSourceRedirect(db: Db, kind: string, fromPlace: string) {
  return db.sourceRedirect.findUnique({ where: { kind_fromPlace: { kind, fromPlace } } });
}

export function listSourceRedirects(db: Db) {
  return db.sourceRedirect.findMany({ orderBy: [{ kind: 'asc' }, { fromPlace: 'asc' }] });
}

export function upsertSourceRedirect(db: Db, r: { kind: string; fromPlace: string; toPlace: string; toBridge: string | null; actor: string }) {
  const now = new Date();
  return db.sourceRedirect.upsert({
    where: { kind_fromPlace: { kind: r.kind, fromPlace: r.fromPlace } },
    create: { kind: r.kind, fromPlace: r.fromPlace, toPlace: r.toPlace, toBridge: r.toBridge, updatedBy: r.actor },
    update: { toPlace: r.toPlace, toBridge: r.toBridge, updatedBy: r.actor, updatedAt: now },
  });
}

/** Deletes one redirect; false when there was none. */
export async function deleteSourceRedirect(db: Db, id: bigint): Promise<boolean> {
  const { count } = await db.sourceRedirect.deleteMany({ where: { id } });
  return count > 0;
}
