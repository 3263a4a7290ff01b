// The database handle and its failure classes as api/ names them: api/ never imports db/
// (scripts/checkStructure.ts), so what it needs of db/ beyond the reads comes through here.
export type { Db } from '../db/createDb.ts';
export { classifyDatabaseError, type DatabaseTrouble } from '../db/errors.ts';
