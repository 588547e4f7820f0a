/**
 * The console's files as the server hands them out: the right content types, a strict CSP and the
 * other headers on every answer, /ui -> /ui/, only the files of src/ui/public (no way out of it),
 * GET and HEAD only, ETag revalidation; and `dnsplane serve` routes /ui/ there.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, consoleHandler, loadConsoleAssets } from '../../src/ui/static.js';

let server: http.Server;
let base = '';

beforeAll(async () => {
  const ui = consoleHandler();
  server = http.createServer((req, res) => ui(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A raw request (fetch would normalize `..` away). */
function raw(method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/`, { method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('console files', () => {
  it('serves index.html at /ui/ and each module with its content type, under a strict CSP', async () => {
    const cases: Array<[string, string]> = [
      ['/ui/', 'text/html; charset=utf-8'],
      ['/ui/app.js', 'text/javascript; charset=utf-8'],
      ['/ui/pages/zones.js', 'text/javascript; charset=utf-8'],
      ['/ui/style.css', 'text/css; charset=utf-8'],
    ];
    for (const [path, type] of cases) {
      const res = await raw('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.headers['content-type'], path).toBe(type);
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-frame-options']).toBe('DENY');
    }
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).toContain("default-src 'none'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
    expect((await raw('GET', '/ui/')).body).toContain('<script type="module" src="app.js"></script>');
  });

  it('has no inline script or style a strict CSP would block', () => {
    for (const [name, asset] of loadConsoleAssets()) {
      if (!name.endsWith('.html')) continue;
      const html = asset.body.toString('utf8');
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    }
  });

  it('/ui redirects to /ui/; unknown files and paths that try to leave the folder are 404 with a text body', async () => {
    const r = await raw('GET', '/ui');
    expect(r.status).toBe(308);
    expect(r.headers['location']).toBe('/ui/');
    for (const path of [
      '/ui/nope.js',
      '/ui/../package.json',
      '/ui/%2e%2e/package.json',
      '/ui/..%2fpackage.json',
      '/ui/pages/../../static.ts',
      '/ui/static.ts',
    ]) {
      const res = await raw('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.body).toMatch(/^no console file ".*"; the console is at \/ui\/\n$/);
    }
  });

  it('answers GET and HEAD only, and revalidates by ETag', async () => {
    const post = await raw('POST', '/ui/app.js');
    expect(post.status).toBe(405);
    expect(post.headers['allow']).toBe('GET, HEAD');
    const head = await raw('HEAD', '/ui/app.js');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const etag = String(head.headers['etag']);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect((await raw('GET', '/ui/app.js', { 'if-none-match': etag })).status).toBe(304);
    expect((await raw('GET', '/ui/app.js?v=1')).status).toBe(200);
  });
});
