// The console and GraphiQL's assets, served the way a CDN would: content-hashed names under
// /assets/ are immutable for a year, everything else is revalidated (ETag → 304), and files
// precompressed at build time (.br, .gz) are sent when the client accepts them.
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { join } from 'node:path';
import sirv from 'sirv';

/** Requests the API answers itself; every other GET or HEAD is the console's. */
const API_PATHS = new Set(['/graphql', '/health', '/ready', '/metrics']);

export function isConsoleRequest(req: IncomingMessage): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const path = (req.url ?? '/').split('?', 1)[0]!;
  return !API_PATHS.has(path) && !path.startsWith('/graphql/');
}

export interface ConsoleSite {
  /** Serves a console asset, or index.html for any client-side route. */
  handle: RequestListener;
  /** GraphiQL's page, pointing at its built assets; null when the build did not write them. */
  renderGraphiQL: ((options?: object) => string) | null;
}

/** Null when `dir` holds no built console (run `npm run build:web`). */
export function openConsoleSite(dir: string): ConsoleSite | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const serve = sirv(dir, {
    etag: true,
    brotli: true,
    gzip: true,
    single: true,
    setHeaders: (res: ServerResponse, pathname: string) => {
      res.setHeader('cache-control', pathname.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
      res.setHeader('x-content-type-options', 'nosniff');
    },
  });
  return {
    handle: (req, res) => serve(req, res, () => void res.writeHead(404).end()),
    renderGraphiQL: graphiqlRenderer(dir),
  };
}

interface GraphiQLManifest {
  js: string;
  css: string;
  workers: Record<'editorWorkerService' | 'json' | 'graphql', string>;
}

// The page Yoga renders inlines 9 MB of script on every load; this one links the same code,
// written to hashed files by scripts/buildWeb.ts, so a repeat visit costs a few hundred bytes.
function graphiqlRenderer(dir: string): ConsoleSite['renderGraphiQL'] {
  const manifestPath = join(dir, 'graphiql.json');
  if (!existsSync(manifestPath)) return null;
  const m = JSON.parse(readFileSync(manifestPath, 'utf8')) as GraphiQLManifest;
  const json = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c');
  return (options = {}) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Lazarus GraphiQL</title>
    <link rel="stylesheet" href="${m.css}" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run this app.</noscript>
    <div id="root"></div>
    <script>
      const workers = ${json(m.workers)};
      self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_id, label) => workers[label] };
    </script>
    <script src="${m.js}"></script>
    <script>
      YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ${json(options)});
    </script>
  </body>
</html>`;
}
