// graphql-ws over WebSocket on the same /graphql path as HTTP and SSE. Operations go through
// yoga.getEnveloped, so parsing, validation, auth scopes and error masking are the same as over
// HTTP; the caller is authenticated at connection time with the same `authenticate(request)`.
import type { IncomingMessage, Server } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Principal } from './auth/principal.ts';
import type { Logger } from '../logger.ts';
import type { GraphQLServer } from './server.ts';

export const DEFAULT_WS_KEEP_ALIVE_MS = 12_000;
// A client that does not read lets the socket's send buffer grow; past this it is disconnected.
export const MAX_WS_BUFFERED_BYTES = 8 * 1024 * 1024;
const CLOSE_TOO_SLOW = 4429;

export interface GraphQLWebSocketDeps {
  server: Server;
  yoga: GraphQLServer;
  authenticate: (request: Request) => Principal | null;
  logger: Logger;
  keepAliveMs?: number;
}

type Envelope = ReturnType<GraphQLServer['getEnveloped']>;
type RootValue = { execute: Envelope['execute']; subscribe: Envelope['subscribe'] };

export function attachGraphQLWebSocket(deps: GraphQLWebSocketDeps): { close(): Promise<void> } {
  const wss = new WebSocketServer({ server: deps.server, path: '/graphql' });
  const logger = deps.logger.child({ component: 'websocket' });
  const disposable = useServer(
    {
      // false closes the socket with 4403 Forbidden before any operation runs.
      onConnect: (ctx) => deps.authenticate(toRequest(ctx.extra.request, ctx.connectionParams)) !== null,
      onSubscribe: async (ctx, _id, payload) => {
        const request = toRequest(ctx.extra.request, ctx.connectionParams);
        const enveloped = deps.yoga.getEnveloped({ request, params: payload } as never);
        let document;
        try {
          document = enveloped.parse(payload.query);
        } catch (error) {
          return [error as never];
        }
        const args: ExecutionArgs = {
          schema: enveloped.schema,
          operationName: payload.operationName,
          document,
          variableValues: payload.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe } satisfies RootValue,
        };
        // Query limits (edge.ts) reject by throwing from validation: answer with an error message
        // for this operation, as over HTTP, rather than failing the whole socket.
        try {
          const errors = enveloped.validate(args.schema, args.document);
          return errors.length ? errors : args;
        } catch (error) {
          return [error as never];
        }
      },
      execute: (args) => (args.rootValue as RootValue).execute(args),
      subscribe: (args) => (args.rootValue as RootValue).subscribe(args),
      onNext: (ctx) => {
        const socket: WebSocket = ctx.extra.socket;
        if (socket.bufferedAmount > MAX_WS_BUFFERED_BYTES) {
          logger.warn({ bufferedBytes: socket.bufferedAmount }, 'closing a WebSocket subscriber that reads too slowly');
          socket.close(CLOSE_TOO_SLOW, 'subscriber too slow; reconnect and resume with the last cursor');
        }
      },
    },
    wss,
    deps.keepAliveMs ?? DEFAULT_WS_KEEP_ALIVE_MS,
  );
  return {
    async close() {
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** The upgrade request as a fetch Request; connectionParams.authorization wins over the header. */
function toRequest(upgrade: IncomingMessage, params: Readonly<Record<string, unknown>> | undefined): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(upgrade.headers)) {
    if (typeof value === 'string' && !name.startsWith('sec-websocket') && name !== 'upgrade' && name !== 'connection') headers.set(name, value);
  }
  const authorization = params?.authorization;
  if (typeof authorization === 'string') headers.set('authorization', authorization);
  return new Request(`http://${upgrade.headers.host ?? 'localhost'}${upgrade.url ?? '/graphql'}`, { headers });
}
