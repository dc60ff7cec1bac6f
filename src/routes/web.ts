// The bundled web client (web/): read once at start and served from memory, public (the page asks
// for the token itself). Assets live under a content-hash path, so they can be cached for good while
// the page itself is revalidated on every load; a new version of any file changes every asset URL.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, ServiceError } from '../base/errors.ts';
import { notFound } from '../http/errors.ts';
import type { Route } from '../http/router.ts';

export const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));
export const NODE_MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/**
 * The libraries the page imports, served as plain ES modules straight from their npm packages: their
 * own browser builds are single self-contained files, so no bundler or build step is needed, and an
 * `npm ci` is all it takes to update them. Asset name → file under node_modules.
 */
export const VENDOR: Record<string, string> = {
  'vendor-marked.js': 'marked/lib/marked.esm.js',
  'vendor-purify.js': 'dompurify/dist/purify.es.mjs',
  'vendor-highlight.js': '@highlightjs/cdn-assets/es/highlight.min.js',
  'vendor-highlight.css': '@highlightjs/cdn-assets/styles/github.min.css',
};

export class WebClientError extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.WEB_CLIENT, message);
    this.name = 'WebClientError';
  }
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

// The page talks only to its own origin and loads nothing from elsewhere (no CDN, no fonts).
const PAGE_HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
};
const IMMUTABLE = { 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' };
const REVALIDATE = { 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };

interface Asset {
  body: Buffer;
  contentType: string;
}

export interface WebClient {
  version: string;
  page: Buffer;
  assets: Map<string, Asset>;
}

/** Reads web/ once: every file but index.html is an asset; the page points at the hashed asset path. */
export function loadWebClient(dir = WEB_DIR, modulesDir = NODE_MODULES): WebClient {
  const assets = new Map<string, Asset>();
  const hash = createHash('sha256');
  let html = '';
  for (const name of readdirSync(dir).sort()) {
    const type = CONTENT_TYPES[path.extname(name)];
    if (!type) continue;
    const body = readFileSync(path.join(dir, name));
    hash.update(name).update(body);
    if (name === 'index.html') html = body.toString('utf8');
    else assets.set(name, { body, contentType: type });
  }
  for (const [name, file] of Object.entries(VENDOR)) {
    const body = readVendor(path.join(modulesDir, file));
    hash.update(name).update(body);
    assets.set(name, { body, contentType: CONTENT_TYPES[path.extname(name)]! });
  }
  if (!html) throw new WebClientError(`web client: ${path.join(dir, 'index.html')} is missing`);
  const version = hash.digest('hex').slice(0, 12);
  // Relative URLs, so the page works at `/` and under the `/api/` proxy prefix alike.
  const page = Buffer.from(html.replaceAll('"assets/', `"assets/${version}/`));
  return { version, page, assets };
}

/** The source-map comment would send a browser's devtools after a .map file this server does not serve. */
function readVendor(file: string): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new WebClientError(`web client: ${file} is missing (run npm ci): ${(err as Error).message}`);
  }
  return Buffer.from(text.replace(/\n\/[/*]# sourceMappingURL=\S+(?: \*\/)?\s*$/, '\n'));
}

export function webRoutes(client: WebClient = loadWebClient()): Route[] {
  return [
    {
      method: 'GET',
      path: '/',
      public: true,
      handler: (_req, reply) => reply.text(200, client.page, CONTENT_TYPES['.html']!, PAGE_HEADERS),
    },
    {
      method: 'GET',
      path: '/assets/:version/:name',
      public: true,
      handler: (req, reply) => {
        const asset = client.assets.get(req.params.name!);
        if (!asset) throw notFound(`no asset named ${req.params.name}`);
        // A page from before a restart may ask for an old version: serve the current file, uncached.
        const headers = req.params.version === client.version ? IMMUTABLE : REVALIDATE;
        reply.text(200, asset.body, asset.contentType, headers);
      },
    },
  ];
}
