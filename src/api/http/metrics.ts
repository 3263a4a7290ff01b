// GET /metrics (Prometheus). Its event types and counts are the queue's, so it asks for the same
// credentials as the API: any key (viewer is enough) when keys are configured, a loopback host when not.
import type { RequestListener } from 'node:http';
import type { Registry } from 'prom-client';
import type { Authenticate } from '../auth/principal.ts';
import { refusalResponse } from '../auth/useHttpAuthStatus.ts';
import type { Logger } from '../../logger.ts';
import { toFetchRequest } from './fetchRequest.ts';

export function serveMetrics(deps: { registry: Registry; authenticate: Authenticate; logger: Logger }): RequestListener {
  return (req, res) => {
    if (deps.authenticate(toFetchRequest(req)) === null) {
      const refusal = refusalResponse(deps.authenticate);
      void refusal.text().then((body) => res.writeHead(refusal.status, Object.fromEntries(refusal.headers)).end(body));
      return;
    }
    deps.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': deps.registry.contentType }).end(text),
      (error: unknown) => {
        deps.logger.error({ err: error }, 'collecting metrics failed');
        res.writeHead(503).end();
      },
    );
  };
}
