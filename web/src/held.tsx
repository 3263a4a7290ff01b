// Held events: PENDING events the retry loop will not deliver until something changes. How the
// console names the reason, and what releases them.
import { Link } from 'react-router';

export type HeldReason = 'PAUSED' | 'NO_TARGET' | 'RELEASING' | 'BLOCKED_KEY';
export interface Hold {
  reason: HeldReason;
  policyEventType: string;
  headId?: string | null;
}

/** A few words for a badge or a table cell. */
export const HELD_LABEL: Record<HeldReason, string> = {
  PAUSED: 'type paused',
  NO_TARGET: 'no target',
  RELEASING: 'ramped release',
  BLOCKED_KEY: 'key blocked',
};

const policyName = (eventType: string) => (eventType === '*' ? 'the default policy "*"' : `the ${eventType} policy`);

const capitalised = (s: string) => s[0]!.toUpperCase() + s.slice(1);

/** Why it waits, as a sentence. */
export function heldWhy(hold: Hold, eventType: string): string {
  switch (hold.reason) {
    case 'PAUSED': return `${eventType} is paused (${policyName(hold.policyEventType)}).`;
    case 'NO_TARGET': return `${capitalised(policyName(hold.policyEventType))} has no delivery target, and no in-process handler takes ${eventType}.`;
    case 'RELEASING': return `A ramped release of held ${eventType} events is under way; this one waits until its redrive reaches it.`;
    case 'BLOCKED_KEY': return `${eventType} is ordered, and the head of this event’s ordering key is EXHAUSTED.`;
  }
}

/** What releases it, with a link to where that is done. */
export function HeldRelease({ hold }: { hold: Hold }) {
  switch (hold.reason) {
    case 'PAUSED': return <>Resuming the type on <Link to="/policies">Retry policies</Link> releases it.</>;
    case 'NO_TARGET': return <>Setting a target on {policyName(hold.policyEventType)} (<Link to="/policies">Retry policies</Link>) releases it.</>;
    case 'RELEASING': return <>Its redrive (<Link to="/redrives">Redrives</Link>) releases it at the ramp’s rate; requeuing it releases it at once.</>;
    case 'BLOCKED_KEY': return <>Requeuing, resolving or discarding the head{hold.headId ? <> (<Link to={`/failures/${hold.headId}`}>{hold.headId}</Link>)</> : null} releases it.</>;
  }
}

/** The badge beside a PENDING status. */
export function HeldBadge({ hold, eventType }: { hold: Hold; eventType: string }) {
  return <span className="badge held" title={heldWhy(hold, eventType)} data-testid="held">held: {HELD_LABEL[hold.reason]}</span>;
}
