// The connection health of the delivery targets that hold connections (brokers), as this process
// sees them: one row per connection, named by kind and host (and vhost), never by a credential.
import type { TargetHealth } from '../../workers/targets/targetKind.ts';
import { targetHealth } from '../../workers/targets/targetKind.ts';
import { TARGET_KINDS } from '../../workers/targets/registry.ts';
import { builder } from './builder.ts';

const TargetConnectionStateEnum = builder.enumType('TargetConnectionState', {
  values: ['CONNECTED', 'CONNECTING', 'DISCONNECTED'] as const,
});

const RetryTargetHealthRef = builder.objectRef<TargetHealth>('RetryTargetHealth').implement({
  description: 'One connection a delivery target kind holds (a broker), in the process that answers.',
  fields: (t) => ({
    kind: t.exposeString('kind'),
    target: t.exposeString('target', { description: 'Host (and vhost, for AMQP): never a user name, password or token.' }),
    state: t.field({ type: TargetConnectionStateEnum, resolve: (h) => h.state }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'The last connection or publish error; null once connected again.' }),
    lastErrorAt: t.expose('lastErrorAt', { type: 'DateTime', nullable: true }),
  }),
});

builder.queryFields((t) => ({
  retryTargetHealth: t.field({
    type: [RetryTargetHealthRef],
    description: 'The connections this process holds to delivery targets (brokers) and their state; empty until a delivery opened one.',
    resolve: () => targetHealth(TARGET_KINDS),
  }),
}));
