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
      // sirv's type table (mrmime) has no .ico, and nosniff forbids guessing.
      if (pathname.endsWith('.ico')) res.setHeader('content-type', 'image/x-icon');
    },
  });
  const notFound = (res: ServerResponse) => void res.writeHead(404).end();
  return {
    // sirv lists the .br and .gz files it negotiates as files of their own, typed by the name under
    // the suffix: /index.html.br came back as text/html in brotli whatever the client accepted.
    // They are only ever sent for their plain name.
    handle: (req, res) => (isPrecompressedVariant(req) ? notFound(res) : serve(req, res, () => notFound(res))),
    renderGraphiQL: graphiqlRenderer(dir),
  };
}

/** A request naming a precompressed file directly, spelled as sirv will decode it. */
function isPrecompressedVariant(req: IncomingMessage): boolean {
  let path = (req.url ?? '/').split('?', 1)[0]!;
  try {
    path = decodeURI(path);
  } catch {
    // sirv looks the undecodable path up as it is.
  }
  return /\.(br|gz)\/?$/.test(path);
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
    <link rel="icon" href="/favicon.ico" />
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

/**
 * GraphiQL's tabs are framer-motion Reorder items dragged within the tab strip. After load the
 * strip's size settles and framer-motion rescales every tab's drag offset into it, leaving each tab
 * translated by up to the strip's width (about 700 px with our 12 example tabs at 1440 px).
 * GraphiQL's own rule hides that offset only while the tab has no focus, so a real mouse press
 * focuses the tab, the tab jumps away from the pointer, and the release (hence the click) lands on
 * the strip: the tab never switched. Keeping tabs untranslated keeps every click on its tab; a drag
 * still reorders them (framer-motion reads its own offset, not the CSS), without the tab following
 * the pointer.
 */
const GRAPHIQL_STYLE = '<style>.graphiql-container .graphiql-tab { transform: none !important; }</style>';

/** A GraphiQL page (ours or Yoga's) with the style above. */
export function withGraphiQLStyle<O>(render: (options: O) => string): (options: O) => string {
  return (options) => render(options).replace('</head>', `${GRAPHIQL_STYLE}\n</head>`);
}
