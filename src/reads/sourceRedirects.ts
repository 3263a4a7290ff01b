// Redirects of redrives to source, for the `sourceRedirects` query: each with whether its destination
// is a place Lazarus has seen (an event's origin names it).
import type { Db } from '../db/createDb.ts';
import { listSourceRedirects } from '../db/models/sourceRedirects.ts';
import { seenSourcePlaces } from '../db/sql/seenSourcePlaces.ts';

export async function readSourceRedirects(db: Db) {
  const rules = await listSourceRedirects(db);
  const seen = await seenSourcePlaces(db, rules.map((r) => ({ kind: r.kind, place: r.toPlace })));
  return rules.map((r) => ({ ...r, isSeenDestination: seen.has(`${r.kind}:${r.toPlace}`) }));
}
