import type { Principal } from '../auth/principal.ts';
import { builder } from './builder.ts';

const RoleEnum = builder.enumType('Role', {
  description: 'Roles nest: VIEWER reads; OPERATOR also acts on dead letters and redrives; ADMIN also manages retry policies.',
  values: { VIEWER: { value: 'viewer' }, OPERATOR: { value: 'operator' }, ADMIN: { value: 'admin' } } as const,
});

const ViewerRef = builder.objectRef<Principal>('Viewer').implement({
  description: 'The caller: the API key’s name and role, or "local" (admin) when no keys are configured.',
  fields: (t) => ({
    name: t.exposeString('name'),
    role: t.field({ type: RoleEnum, resolve: (p) => p.role }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    description: 'Who is calling, so a client can hide what the role cannot do (the server still enforces it).',
    resolve: (_root, _args, ctx) => ctx.principal!,
  }),
);
