// Bearer-token authentication against the configured API keys. Only SHA-256 hashes of tokens
// are held; a presented token is hashed and compared with every key in constant time, so
// neither the match position nor a near-miss shows in the timing.
import { createHash, timingSafeEqual } from 'node:crypto';
import { LOCAL_PRINCIPAL, type Principal, type Role } from './principal.ts';

export interface ApiKey {
  name: string;
  role: Role;
  tokenSha256: Buffer;
}

export type Authenticate = (request: Request) => Principal | null;

/**
 * With keys: the principal of the key in `Authorization: Bearer <token>`, or null (missing or
 * wrong). Without keys: everyone is LOCAL_PRINCIPAL (service.ts only allows that on loopback).
 */
export function createApiKeyAuthenticator(keys: readonly ApiKey[]): Authenticate {
  if (keys.length === 0) return () => LOCAL_PRINCIPAL;
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

/** 127.0.0.0/8, ::1 and localhost: addresses only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
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
