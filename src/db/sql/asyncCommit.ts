// A select-list item that makes the statement's transaction commit asynchronously: for the service's
// periodic statements whose last few commits a crash may undo without harm (retention deletes again,
// compaction folds its batch again from the ledger, which the crash restores with it). Not the error
// group fold: it raises alerts, and an alert sent for a fold a crash then undid would name a group
// that no longer exists.
// set_config(…, true) lasts until the transaction ends, and PostgreSQL reads synchronous_commit at
// commit. A synchronous commit keeps its xid running until its commit record is flushed, so the live
// feed's horizon waits for the flush too; and a commit that sent a NOTIFY (retention's tombstones)
// holds PostgreSQL's one notify-queue lock over the flush, so every NOTIFYing commit of the server,
// i.e. every ingest, waits behind it. Asynchronous, both are released once the commit record is
// written; a crash loses at most wal_writer_delay × 3 of such commits.
import { Prisma } from '../../generated/prisma/client.ts';

export const ASYNC_COMMIT = Prisma.sql`set_config('synchronous_commit', 'off', true)`;
