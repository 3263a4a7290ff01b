// Per-principal request counting for the API's rate limit: a write (one upsert per request), so it
// sits on the write side; api/ never imports db/ (scripts/checkStructure.ts).
export { countRequest, type RequestCount } from '../db/sql/countRequest.ts';
