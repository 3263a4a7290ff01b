import { Prisma } from '../../generated/prisma/client.ts';

/**
 * A redrive row's limits as a JSON object, for history rows (a fragment, not a statement: `alias`
 * is the redrives row in the statement that uses it).
 */
export function redriveLimitsJson(alias: 'r' | 'c'): Prisma.Sql {
  const a = Prisma.raw(alias);
  return Prisma.sql`jsonb_build_object(
    'startRatePerSecond', coalesce(${a}.start_rate_per_second, ${a}.rate_per_second), 'maxRatePerSecond', ${a}.rate_per_second,
    'rampSeconds', ${a}.ramp_seconds, 'pauseWhenFailureRateAbove', ${a}.pause_when_failure_rate_above, 'windowSize', ${a}.window_size)`;
}
