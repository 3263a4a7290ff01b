import type { IncomingMessage } from 'node:http';

/** A Node request's URL and headers as a fetch Request (no body), for authenticate() and the Origin check. */
export function toFetchRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string' && !name.startsWith('sec-websocket') && name !== 'upgrade' && name !== 'connection') headers.set(name, value);
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { headers });
}
