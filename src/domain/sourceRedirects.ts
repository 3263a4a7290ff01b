// Redirect rules for redrives to source (ServicePulse's redirects): what would go back to
// `kind:fromPlace` goes to `toPlace` instead, through `toBridge`'s broker when set.
import type { Db } from '../db/createDb.ts';
import { deleteSourceRedirect, upsertSourceRedirect } from '../db/models/sourceRedirects.ts';
import { ValidationError } from './errors.ts';

export const SOURCE_REDIRECT_KINDS = ['amqp', 'nats', 'redis'] as const;
const MAX_PLACE_LENGTH = 1024;

export interface SourceRedirectInput {
  kind: string;
  fromPlace: string;
  toPlace: string;
  toBridge: string | null;
}

/**
 * Creates or replaces the rule for `kind:fromPlace`. `bridgeKinds` maps each declared bridge to the
 * origin kind it serves: `toBridge` must be one of the same kind. Throws ValidationError; writes nothing then.
 */
export async function saveSourceRedirect(db: Db, actor: string, input: SourceRedirectInput, bridgeKinds: ReadonlyMap<string, string>) {
  if (!(SOURCE_REDIRECT_KINDS as readonly string[]).includes(input.kind)) throw new ValidationError('kind', `must be one of ${SOURCE_REDIRECT_KINDS.join(', ')}`);
  for (const field of ['fromPlace', 'toPlace'] as const) {
    const value = input[field];
    if (value.trim() === '' || value.length > MAX_PLACE_LENGTH || value.includes('\u0000')) {
      throw new ValidationError(field, `must be a queue, subject or stream name of 1 to ${MAX_PLACE_LENGTH} characters`);
    }
  }
  if (input.toPlace === input.fromPlace && input.toBridge === null) throw new ValidationError('toPlace', 'must differ from fromPlace (or name another bridge)');
  if (input.toBridge !== null) {
    const kind = bridgeKinds.get(input.toBridge);
    if (!kind) throw new ValidationError('toBridge', `no bridge named ${JSON.stringify(input.toBridge.slice(0, 100))} is declared on this instance`);
    if (kind !== input.kind) throw new ValidationError('toBridge', `bridge ${input.toBridge} serves ${kind}, not ${input.kind}`);
  }
  return upsertSourceRedirect(db, { ...input, actor });
}

export function removeSourceRedirect(db: Db, id: bigint): Promise<boolean> {
  return deleteSourceRedirect(db, id);
}
