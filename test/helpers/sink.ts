// A local webhook receiver on port 0. Each request is recorded; `respond` decides the answer.
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SinkRequest {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; attempt: number; payload: unknown };
}

export interface Sink {
  url: string;
  requests: SinkRequest[];
  /** Emits `request` (SinkRequest) as each request arrives, before it is answered. */
  readonly events: EventEmitter;
  respond: (req: SinkRequest, res: ServerResponse) => void;
  /** From now on, requests get no answer until `release()` (a slow or hung receiver); `hold(false)` answers new ones again, leaving the held ones waiting. */
  hold(on?: boolean): void;
  /** Answers up to `count` held requests (oldest first) with `status`; releasing all stops holding. Returns how many. */
  release(status?: number, count?: number): number;
  /** Requests waiting for an answer right now. */
  readonly heldCount: number;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  let holding = false;
  const held: ServerResponse[] = [];
  const sink: Sink = {
    url: '',
    requests: [],
    events: new EventEmitter(),
    respond: (_req, res) => {
      if (holding) held.push(res);
      else res.writeHead(200).end('ok');
    },
    hold: (on = true) => {
      holding = on;
    },
    release: (status = 200, count = Infinity) => {
      if (count >= held.length) holding = false;
      const waiting = held.splice(0, count);
      for (const res of waiting) if (!res.destroyed) res.writeHead(status).end('ok');
      return waiting.length;
    },
    get heldCount() {
      return held.length;
    },
    close: async () => {},
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const entry = { headers: req.headers, body, json: JSON.parse(body || '{}') };
      sink.requests.push(entry);
      sink.events.emit('request', entry);
      sink.respond(entry, res);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  sink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  sink.close = async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  };
  return sink;
}
