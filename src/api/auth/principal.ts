// Who is calling. Roles nest: viewer ⊂ operator ⊂ admin.
export type Role = 'viewer' | 'operator' | 'admin';

export interface Principal {
  /** What history records as the actor. */
  name: string;
  role: Role;
}

/** Who sent a request: its principal, or null when it carries no valid credentials. */
export interface Authenticate {
  (request: Request): Principal | null;
  /** How an HTTP request it refuses is answered; default 401 "missing or invalid API key". */
  readonly refusal?: { readonly status: 401 | 403; readonly message: string };
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export function hasRole(principal: Principal | null, needed: Role): boolean {
  return principal !== null && RANK[principal.role] >= RANK[needed];
}

/** Used while no API keys are configured, for requests addressed to a loopback host. */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ name: 'local', role: 'admin' });
