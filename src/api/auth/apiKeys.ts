// Bearer-token authentication against the configured API keys. Only SHA-256 hashes of tokens
// are held; a presented token is hashed and compared with every key in constant time, so
// neither the match position nor a near-miss shows in the timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { LOCAL_PRINCIPAL, type Authenticate, type Principal, type Role } from './principal.ts';

export interface ApiKey {
  name: string;
  role: Role;
  tokenSha256: Buffer;
}

const LOOPBACK_ONLY_REFUSAL = {
  status: 403,
  message:
    'no API keys are configured, so this service answers only requests addressed to localhost, 127.0.0.1 or [::1]; ' +
    'set LAZARUS_API_KEYS (name:role:token,...) to serve other host names, or open it at a loopback address',
} as const;

/**
 * With keys: the principal of the key in `Authorization: Bearer <token>`, or null (missing or
 * wrong). Without keys: LOCAL_PRINCIPAL for requests addressed to a loopback host (service.ts
 * only starts keyless on a loopback address), and for any host with `allowInsecure`.
 */
export function createApiKeyAuthenticator(keys: readonly ApiKey[], options: { allowInsecure?: boolean } = {}): Authenticate {
  if (keys.length === 0 && options.allowInsecure) return () => LOCAL_PRINCIPAL;
  // A browser sends the name it resolved as Host. A page whose own name the attacker re-points at
  // 127.0.0.1 (DNS rebinding) is same-origin with this service, but its Host is still that name.
  if (keys.length === 0) {
    return Object.assign((request: Request) => (isLoopbackHost(new URL(request.url).hostname) ? LOCAL_PRINCIPAL : null), { refusal: LOOPBACK_ONLY_REFUSAL });
  }
  const principals = keys.map((k) => Object.freeze({ name: k.name, role: k.role }));
  return (request) => {
    const token = bearerToken(request.headers.get('authorization'));
    if (token === null) return null;
    const presented = createHash('sha256').update(token).digest();
    let match: Principal | null = null;
    for (let i = 0; i < keys.length; i++) {
      if (timingSafeEqual(presented, keys[i]!.tokenSha256) && match === null) match = principals[i]!;
    }
    return match;
  };
}

function bearerToken(header: string | null): string | null {
  const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
  return match ? match[1]! : null;
}

/** localhost and what ipaddr.js calls loopback (127.0.0.0/8, ::1, ::ffff:127.x.y.z): only this machine reaches them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || (ipaddr.isValid(h) && ipaddr.process(h).range() === 'loopback');
}

/**
 * Why the service must not start with this auth setup, or null. Without keys it would let anyone
 * who can reach it act as admin, so that is only allowed on loopback or with an explicit flag.
 */
export function authStartupProblem(p: { keyCount: number; host: string; allowInsecure: boolean }): string | null {
  if (p.keyCount > 0 || isLoopbackHost(p.host) || p.allowInsecure) return null;
  return `no API keys configured and HOST=${p.host} is not a loopback address: set LAZARUS_API_KEYS ` +
    `(name:role:token,...), listen on 127.0.0.1, or set LAZARUS_ALLOW_INSECURE=true to allow everyone as admin`;
}
