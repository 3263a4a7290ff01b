import { createDb } from '../src/db/createDb.ts';
for (const url of ['postgresql://postgres@127.0.0.1:5432/postgres', 'postgresql://postgres@127.0.0.1:5432/postgres?options=-c%20work_mem%3D7MB', 'postgresql://postgres@127.0.0.1:5432/postgres?options=-c%20jit%3Don']) {
  const h = createDb(url, { poolMax: 1, acquireTimeoutMs: 5000, statementTimeoutMs: 5000, applicationName: 'x' });
  const r = await h.pool.query("select current_setting('jit') as jit, current_setting('work_mem') as wm");
  console.log(url, r.rows[0]);
  await h.close();
}
