// Channel names; each matches the literal in the migration that sends it.

/** NOTIFY hints from tg_lazarus__notify (prisma/migrations/20261121000000_init). */
export const CHANGES_CHANNEL = 'lazarus_changes';
