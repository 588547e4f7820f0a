/**
 * The admin console's files, served at /ui/ on the API port by `dnsplane serve`. The console is plain
 * ES modules and CSS (src/ui/public/), no build step: the browser loads them as they are and calls the
 * Connect JSON API on the same origin with the bearer token the operator signs in with (kept in
 * sessionStorage, sent only in the Authorization header).
 *
 * The files are read once, when the server starts, into a fixed table: only those paths exist, so no
 * request path can reach another file. Every answer carries a strict Content-Security-Policy (scripts,
 * styles and API calls from this origin only; no inline script, no framing, no form submission),
 * nosniff and no-referrer. This module imports nothing of dnsplane's.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type http from 'node:http';
import type http2 from 'node:http2';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the console's files are. */
export const CONSOLE_DIR = fileURLToPath(new URL('./public/', import.meta.url));

/** The path prefix the console is served under. */
export const CONSOLE_PREFIX = '/ui/';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
};

interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/** Answers a request whose path is /ui or starts with /ui/. */
export type ConsoleHandler = (req: Request, res: Response) => void;

function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(dir, rel)).sort()) {
    const r = rel === '' ? name : `${rel}/${name}`;
    if (statSync(path.join(dir, r)).isDirectory()) out.push(...walk(dir, r));
    else out.push(r);
  }
  return out;
}

/** Reads the console's files (a file of an unknown type is an error: the table would not serve it). */
export function loadConsoleAssets(dir = CONSOLE_DIR): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const rel of walk(dir)) {
    // Types for the TypeScript that imports a module of the console (client-configs.d.ts): not the console's.
    if (rel.endsWith('.d.ts')) continue;
    const contentType = CONTENT_TYPES[path.extname(rel)];
    if (!contentType) throw new Error(`console: ${rel} has no known content type (known: ${Object.keys(CONTENT_TYPES).join(', ')})`);
    const body = readFileSync(path.join(dir, rel));
    assets.set(rel, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });
  }
  if (!assets.has('index.html')) throw new Error(`console: ${dir} has no index.html`);
  return assets;
}

function send(res: Response, status: number, headers: Record<string, string>, body?: Buffer | string): void {
  const r = res as http.ServerResponse;
  r.writeHead(status, {
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cache-control': 'no-cache',
    ...headers,
  });
  r.end(body);
}

export function consoleHandler(assets: Map<string, Asset> = loadConsoleAssets()): ConsoleHandler {
  return (req, res) => {
    const pathname = (req.url ?? '/').split('?')[0] ?? '/';
    if (pathname === '/ui') return send(res, 308, { location: CONSOLE_PREFIX });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }, 'the console answers GET and HEAD only\n');
    }
    const rel = pathname === CONSOLE_PREFIX ? 'index.html' : pathname.slice(CONSOLE_PREFIX.length);
    const asset = assets.get(rel);
    if (!asset) return send(res, 404, { 'content-type': 'text/plain; charset=utf-8' }, `no console file "${rel}"; the console is at ${CONSOLE_PREFIX}\n`);
    if (req.headers['if-none-match'] === asset.etag) return send(res, 304, { etag: asset.etag });
    send(
      res,
      200,
      { 'content-type': asset.contentType, 'content-length': String(asset.body.length), etag: asset.etag },
      req.method === 'HEAD' ? undefined : asset.body,
    );
  };
}
