// Every delivery target kind this build knows. A new kind (amqp, nats, redis…) is one file in this
// folder exporting a TargetKind, and one line here; docs/brokers.md has the contract.
import { createAmqpTarget } from './amqp.ts';
import { createNatsTarget } from './nats.ts';
import { createRedisTarget } from './redis.ts';
import { kindMap } from './targetKind.ts';
import { createWebhookTarget } from './webhook.ts';

export const TARGET_KINDS = kindMap([
  createWebhookTarget(),
  createAmqpTarget(),
  createNatsTarget(),
  createRedisTarget(),
]);
