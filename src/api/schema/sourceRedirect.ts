// Redirects of redrives to source (admins write, any viewer reads): what would be redriven to an AMQP
// queue, NATS subject or Redis stream goes elsewhere. docs/brokers.md, "Redirects".
import { ValidationError } from '../../domain/errors.ts';
import { removeSourceRedirect, saveSourceRedirect } from '../../domain/sourceRedirects.ts';
import { readSourceRedirects } from '../../reads/sourceRedirects.ts';
import { builder } from './builder.ts';
import { parseId } from './ids.ts';

type RedirectView = Awaited<ReturnType<typeof readSourceRedirects>>[number];

/** Origin kinds by bridge kind (the bridge's messages carry origins of this kind). */
const ORIGIN_KIND_OF_BRIDGE: Record<string, string> = { rabbitmq: 'amqp', nats: 'nats', jetstream: 'nats', redis: 'redis' };

const SourceRedirectRef = builder.objectRef<RedirectView>('SourceRedirect').implement({
  description: 'What would be redriven to source `kind:fromPlace` goes to `toPlace` instead.',
  fields: (t) => ({
    id: t.id({ resolve: (r) => r.id.toString() }),
    kind: t.exposeString('kind', { description: 'amqp (a queue), nats (a subject) or redis (a stream).' }),
    fromPlace: t.exposeString('fromPlace'),
    toPlace: t.exposeString('toPlace'),
    toBridge: t.exposeString('toBridge', { nullable: true, description: 'The bridge whose broker it goes through; null: the event’s own.' }),
    isSeenDestination: t.exposeBoolean('isSeenDestination', { description: 'Some event came from toPlace: a place Lazarus has seen. False deserves a second look.' }),
    updatedBy: t.exposeString('updatedBy'),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const SourceRedirectInput = builder.inputType('SourceRedirectInput', {
  fields: (t) => ({
    kind: t.string({ required: true, description: 'amqp, nats or redis.' }),
    fromPlace: t.string({ required: true, description: 'The queue, subject or stream an event’s origin names.' }),
    toPlace: t.string({ required: true }),
    toBridge: t.string({ description: 'A declared bridge of the same kind; default the event’s own.' }),
  }),
});

builder.queryField('sourceRedirects', (t) => t.field({
  type: [SourceRedirectRef],
  description: 'Redirect rules of redrives to source, by kind and place.',
  resolve: (_root, _args, ctx) => readSourceRedirects(ctx.db),
}));

builder.mutationFields((t) => ({
  upsertSourceRedirect: t.field({
    type: SourceRedirectRef,
    authScopes: { admin: true },
    description: 'Creates or replaces the redirect of `kind:fromPlace`.',
    args: { input: t.arg({ type: SourceRedirectInput, required: true }) },
    errors: { types: [ValidationError], directResult: true },
    resolve: async (_root, { input }, ctx) => {
      const bridgeKinds = new Map((ctx.bridges?.list() ?? []).map((b) => [b.name, ORIGIN_KIND_OF_BRIDGE[b.kind] ?? b.kind]));
      const saved = await saveSourceRedirect(ctx.db, ctx.principal!.name, { ...input, toBridge: input.toBridge ?? null }, bridgeKinds);
      return (await readSourceRedirects(ctx.db)).find((r) => r.id === saved.id)!;
    },
  }),
  deleteSourceRedirect: t.boolean({
    authScopes: { admin: true },
    description: 'Deletes a redirect; false when there was none.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => removeSourceRedirect(ctx.db, parseId(id)),
  }),
}));
