// Channel names; each matches the literal in the migration that sends it.

/** NOTIFY hints from tg_lazarus__notify (prisma/migrations/20261121000000_init). */
export const CHANGES_CHANNEL = 'lazarus_changes';

/** Wake-ups for alert deliverers from lazarus_raise_alert() (prisma/migrations/20261125134500_alerts); no payload. */
export const ALERTS_CHANNEL = 'lazarus_alerts';
