import type { HeldRelease } from '../../domain/policyRelease.ts';
import { DEFAULT_WRITE_CONFIG } from '../../domain/writeConfig.ts';
import type { RetryPolicy } from '../../generated/prisma/client.ts';
import { builder } from './builder.ts';

export const HeldReleaseModeEnum = builder.enumType('HeldReleaseMode', {
  description: 'How a policy save releases the held events it lets go.',
  values: {
    RAMPED: { description: 'As a redrive (on the Redrives page) that ramps from a tenth of the redrive rate up to it over a minute; the events wait, held as RELEASING, until it reaches them.' },
    AT_ONCE: { description: 'All due now: delivered as fast as the retry loop and the type’s concurrency allow.' },
  },
});

const HeldReleaseRef = builder.objectRef<HeldRelease>('HeldRelease').implement({
  description: 'The held events a policy save let go, and how.',
  fields: (t) => ({
    count: t.exposeInt('count'),
    mode: t.field({ type: HeldReleaseModeEnum, resolve: (r) => r.mode }),
    redriveId: t.id({ nullable: true, description: 'RAMPED: the redrive that releases them.', resolve: (r) => r.redriveId?.toString() ?? null }),
  }),
});

/** The policy upsertRetryPolicy returns carries what its save released. */
export type SavedRetryPolicy = RetryPolicy & { heldRelease?: HeldRelease | null };

builder.prismaObjectFields('RetryPolicy', (t) => ({
  heldRelease: t.field({
    type: HeldReleaseRef,
    nullable: true,
    description: 'Only on the policy upsertRetryPolicy returns: the held events that save let go, and how; null when it let none go (and on every other read).',
    resolve: (p) => (p as SavedRetryPolicy).heldRelease ?? null,
  }),
}));

const RedriveSettingsRef = builder.objectRef<{ threshold: number; ratePerSecond: number }>('RedriveSettings').implement({
  description: 'This server’s redrive settings.',
  fields: (t) => ({
    threshold: t.exposeInt('threshold', { description: 'A requeue by filter, or a policy save releasing held events, above this many events runs as a ramped redrive by default.' }),
    ratePerSecond: t.exposeInt('ratePerSecond', { description: 'The default redrive rate, events per second.' }),
  }),
});

builder.queryFields((t) => ({
  redriveSettings: t.field({
    type: RedriveSettingsRef,
    resolve: (_root, _args, ctx) => {
      const config = ctx.writeConfig ?? DEFAULT_WRITE_CONFIG;
      return { threshold: config.redriveThreshold, ratePerSecond: config.redriveRatePerSecond };
    },
  }),
}));
