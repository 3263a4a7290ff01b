// The streams and consumers a NATS bridge reads: the advisory stream (checked, or created when
// missing) and the bridge's durable pull consumer; and the subject matching both need.
import { AckPolicy, DeliverPolicy, DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';

/** How long a stream the bridge creates keeps advisories (its max_age). */
const ADVISORY_MAX_AGE_MS = 7 * 86_400_000;
const ADVISORY_SUBJECTS = ['$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES', '$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED'];
const NANOS_PER_MS = 1_000_000;

/** The advisory stream must capture both advisories of every watched consumer; created when missing. */
export async function ensureAdvisoryStream(jsm: JetStreamManager, name: string, consumers: readonly { stream: string; consumer?: string | undefined }[]): Promise<void> {
  const needed = consumers.flatMap((c) => ADVISORY_SUBJECTS.map((prefix) => `${prefix}.${c.stream}.${c.consumer ?? '*'}`));
  let subjects: string[];
  try {
    subjects = (await jsm.streams.info(name)).config.subjects ?? [];
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
    try {
      await jsm.streams.add({
        name, subjects: ADVISORY_SUBJECTS.map((prefix) => `${prefix}.>`), retention: RetentionPolicy.Limits,
        storage: StorageType.File, discard: DiscardPolicy.Old, max_age: ADVISORY_MAX_AGE_MS * NANOS_PER_MS,
        description: 'JetStream consumer advisories (MAX_DELIVERIES, MSG_TERMINATED) kept for Lazarus bridges',
      });
    } catch (addError) {
      throw new Error(`cannot create the advisory stream ${name}: ${(addError as Error).message}`, { cause: addError });
    }
    return;
  }
  const missing = needed.filter((subject) => !subjects.some((pattern) => subjectCovers(pattern, subject)));
  if (missing.length > 0) {
    throw new Error(`stream ${name} does not capture ${missing.join(', ')}: add the subjects to it, or name another advisoryStream`);
  }
}

export interface DurableSpec {
  stream: string;
  durable: string;
  /** The bridge's name, in the durable's description. */
  bridge: string;
  filterSubject: string | undefined;
  ackWaitMs: number;
  maxAckPending: number;
}

/** The bridge's durable pull consumer: created when missing; an existing one must ack explicitly and filter the same. */
export async function ensureDurable(jsm: JetStreamManager, d: DurableSpec): Promise<void> {
  const { stream, durable } = d;
  const ackWait = d.ackWaitMs * NANOS_PER_MS;
  try {
    const { config } = await jsm.consumers.info(stream, durable);
    if (config.ack_policy !== AckPolicy.Explicit) throw new Error(`consumer ${durable} on stream ${stream} must ack explicitly (its ack_policy is ${config.ack_policy}): delete it or name another durable`);
    if ((config.filter_subject ?? '') !== (d.filterSubject ?? '')) {
      throw new Error(`consumer ${durable} on stream ${stream} filters ${config.filter_subject || 'nothing'}, not ${d.filterSubject ?? 'nothing'}: delete it or name another durable`);
    }
    if (config.ack_wait !== ackWait) await jsm.consumers.update(stream, durable, { ack_wait: ackWait });
    return;
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.StreamNotFound)) throw new Error(`stream ${stream} does not exist: create it first`, { cause: error });
    if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
  }
  await jsm.consumers.add(stream, {
    durable_name: durable, description: `Lazarus bridge ${d.bridge}`, ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All, ack_wait: ackWait, max_ack_pending: d.maxAckPending,
    ...(d.filterSubject && { filter_subject: d.filterSubject }),
  });
}

export function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}

/** A subject with `*` and a last `>` as whole tokens. */
export function isSubjectFilter(subject: string): boolean {
  const tokens = subject.split('.');
  return tokens.every((t, i) => t !== '' && !/\s/.test(t) && (t === '*' || t === '>' || !/[*>]/.test(t)) && (t !== '>' || i === tokens.length - 1));
}

/** Whether every subject `subject` can stand for (it may hold `*` tokens) is matched by `pattern`. */
export function subjectCovers(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return i < s.length;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
