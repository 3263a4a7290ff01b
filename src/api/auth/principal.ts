// Who is calling. Roles nest: viewer ⊂ operator ⊂ admin.
export type Role = 'viewer' | 'operator' | 'admin';

export interface Principal {
  /** What history records as the actor. */
  name: string;
  role: Role;
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export function hasRole(principal: Principal | null, needed: Role): boolean {
  return principal !== null && RANK[principal.role] >= RANK[needed];
}

/** Used while no API keys are configured (only allowed on a loopback listener). */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ name: 'local', role: 'admin' });
