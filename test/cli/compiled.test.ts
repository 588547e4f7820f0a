/**
 * Production runs compiled JavaScript: what `npm run build` emits (tsc with tsconfig.build.json, then
 * scripts/dist-assets.mjs) is run by bin/dnsplane.js with plain node, laid out as the image's runtime
 * stage lays it out (package.json, migrations/, bin/dnsplane.js and bin/pretenuring.js, dist/), here
 * in a temporary directory with this checkout's node_modules.
 *
 * - Without dist/, bin/dnsplane.js exits 1 with a message naming `npm run build`.
 * - The build copies src/'s non-TypeScript files (the console, the worker and the module hook loaded by
 *   a path relative to their module) and removes what dist/ holds that src/ no longer has.
 * - `dnsplane serve --demo` from dist/ on a DATABASE_URL: migrates (migrations/ found from
 *   dist/store/), /healthz answers, the console is served (and not the stale file), the demo
 *   token's Records call answers the demo zone; SIGTERM stops it with status 0.
 * .ci/image-dir runs the Dockerfile's stages for real (npm ci --omit=dev: no tsx in the runtime).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { freePort } from '../helpers/serve-process.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every file under dir, relative, with '/' separators. */
function files(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    return e.isDirectory() ? files(dir, r) : [r];
  });
}

describe('bin/dnsplane.js on the compiled dist/', () => {
  let app: string;
  let db: TestDatabase;

  beforeAll(async () => {
    app = mkdtempSync(path.join(tmpdir(), 'dnsplane-compiled-'));
    mkdirSync(path.join(app, 'bin'));
    for (const f of ['bin/dnsplane.js', 'bin/pretenuring.js', 'package.json']) copyFileSync(path.join(ROOT, f), path.join(app, f));
    symlinkSync(path.join(ROOT, 'migrations'), path.join(app, 'migrations'));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'));
    db = await testDatabase();
  });
  afterAll(async () => {
    await db?.drop();
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('without dist/: exit 1, naming npm run build', async () => {
    const r = await run(process.execPath, [path.join(app, 'bin/dnsplane.js'), '--help']).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('dnsplane: dist/ is not built: run `npm run build` (`npm start` builds, then serves)\n');
  });

  it('the build: JavaScript for every source, src/ files that are not TypeScript copied, stale files removed', async () => {
    const dist = path.join(app, 'dist');
    mkdirSync(path.join(dist, 'ui/public'), { recursive: true });
    writeFileSync(path.join(dist, 'ui/public/gone.js'), 'a console file since removed from src/\n');
    mkdirSync(path.join(dist, 'moved'));
    writeFileSync(path.join(dist, 'moved/old.js'), 'emitted from a source since moved\n');
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    await run(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', dist, '--tsBuildInfoFile', path.join(dist, '.tsbuildinfo')]);
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'scripts/dist-assets.mjs'), dist]);
    expect(stdout).toMatch(/: \d+ asset\(s\) copied, 2 stale file\(s\) removed\n$/);

    const src = files(path.join(ROOT, 'src'));
    const expected = src.map((f) => (f.endsWith('.d.ts') ? null : f.replace(/\.ts$/, '.js'))).filter((f) => f !== null);
    expect(
      files(dist)
        .filter((f) => f !== '.tsbuildinfo')
        .sort(),
    ).toEqual(expected.sort());
    for (const asset of ['ui/public/index.html', 'api/yaml-worker.mjs', 'store/embedded/binaries-hook.mjs'])
      expect(existsSync(path.join(dist, asset))).toBe(true);
    expect(existsSync(path.join(dist, 'moved'))).toBe(false);
  });

  it('serve --demo on a DATABASE_URL: /healthz, the console, a Records call; SIGTERM exits 0', async () => {
    const port = await freePort();
    const data = mkdtempSync(path.join(app, 'data-'));
    const child = spawn(process.execPath, [path.join(app, 'bin/dnsplane.js'), 'serve', '--demo'], {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: data,
        NODE_ENV: 'production',
        DATABASE_URL: db.url,
        DNSPLANE_DATA_DIR: data,
        DNSPLANE_LISTEN: `127.0.0.1:${port}`,
        DNSPLANE_WEBHOOK_LISTEN: 'off',
        DNSPLANE_DRIFT_INTERVAL: 'off',
        DNSPLANE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}`;
    try {
      // Waits for the banner's demo token (printed once the server serves); a bound for a hang only.
      for (let i = 0; i < 2400 && !/^ {2}demo: {2}dnsp_/m.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
      const token = /^ {2}demo: {2}(dnsp_[A-Za-z0-9_-]+)/m.exec(out)?.[1];
      expect(token, out).toBeDefined();
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const ui = await fetch(`${url}/ui/`);
      expect(ui.status).toBe(200);
      expect(await ui.text()).toContain('<script type="module"');
      expect((await fetch(`${url}/ui/gone.js`)).status).toBe(404);
      const records = await fetch(`${url}/dnsplane.v1.ZoneService/Records`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"includeForeign":true}',
      });
      expect(records.status).toBe(200);
      expect(((await records.json()) as { zones: { zone: string }[] }).zones.map((z) => z.zone)).toEqual(['example.test']);
      expect((await db.pool.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n).toBe(
        readdirSync(path.join(ROOT, 'migrations')).filter((f) => f.endsWith('.sql')).length,
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, out).toBe(0);
  });
});
