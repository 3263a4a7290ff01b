// Every bridge kind this build knows. A new kind (nats, redis, kafka…) is one file in this folder
// exporting a BridgeKind, and one line here; docs/brokers.md ("Bridges in") has the contract.
import type { BridgeKind, BridgeKinds } from './bridgeKind.ts';
import { createNatsBridge } from './nats.ts';
import { createRabbitmqBridge } from './rabbitmq.ts';
import { createRedisBridge } from './redis.ts';

export const BRIDGE_KINDS: BridgeKinds = new Map(([
  createRabbitmqBridge(),
  createNatsBridge(),
  createRedisBridge(),
] as BridgeKind[]).map((k) => [k.kind, k]));
