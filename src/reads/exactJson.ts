// JSON that producers sent, with every number as stored (see db/exactJson.ts and
// db/sql/exactJsonColumns.ts).
export { numberKeptExact, parseJsonKeepingNumbers } from '../db/exactJson.ts';
export { isExactJson } from '../db/runSql.ts';
export { readExactJson, type ExactJsonColumn, type ExactJsonTable } from '../db/sql/exactJsonColumns.ts';
