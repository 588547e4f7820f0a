/**
 * CLI commands beside a running `dnsplane serve` on the embedded default: the server publishes
 * connection.json (0600) in its data dir, `dnsplane tenant …` connects through it instead of
 * refusing, and the new tenant's token works on the running server at once. Without the file the
 * error names the ways out; after a clean stop the file is gone, and a stale one left by a killed
 * run does not stop a normal (own embedded Postgres) start.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = path.resolve('bin/dnsplane-dev.js');
const dataDir = mkdtempSync(path.join(tmpdir(), 'dnsplane-beside-'));
chmodSync(dataDir, 0o755); // as root, the embedded Postgres runs as "postgres", which must reach it
const connFile = path.join(dataDir, 'connection.json');
const env = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '/',
  DNSPLANE_DATA_DIR: dataDir,
  DNSPLANE_LISTEN: '127.0.0.1:0',
  DNSPLANE_WEBHOOK_LISTEN: 'off',
  DNSPLANE_DRIFT_INTERVAL: 'off',
  DNSPLANE_LOG_LEVEL: 'warn',
};

let server: ChildProcess | undefined;
afterAll(() => {
  if (server && server.exitCode === null) server.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
});

function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 180_000 }, (error, out, err) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, out, err });
    });
  });
}

async function waitFor(what: string, cond: () => boolean, child: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 2400 && !cond(); i++) {
    if (child.exitCode !== null) throw new Error(`the server exited while waiting for ${what}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!cond()) throw new Error(`no ${what} after 240 s:\n${log()}`);
}

async function records(apiUrl: string, token: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${apiUrl}/dnsplane.v1.ZoneService/Records`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"includeForeign":true}',
  });
  return { status: res.status, body: await res.text() };
}

describe('dnsplane tenant beside a running serve on the embedded default', () => {
  it('connects through connection.json; the token works on the running server; clean stop removes the file; a stale file does not stop a normal start', async () => {
    const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    server = child;
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(
      'banner',
      () => /Try it:/.test(out),
      child,
      () => out,
    );
    const apiUrl = /API: +(http:\/\/127\.0\.0\.1:\d+)/.exec(out)![1]!;

    // the connection file: 0600, this server's pid, a URL
    expect(statSync(connFile).mode & 0o777).toBe(0o600);
    const info = JSON.parse(readFileSync(connFile, 'utf8')) as { url: string; pid: number };
    expect(info.pid).toBe(child.pid);
    expect(info.url).toMatch(/^postgres:\/\/dnsplane:[^@]+@127\.0\.0\.1:\d+\/dnsplane$/);

    // tenant create beside it, and the token works on the running server at once
    const created = await cli(['tenant', 'create', 'beside', '--zone', 'example.test']);
    expect(created.err).not.toMatch(/already in use/);
    expect(created.code).toBe(0);
    expect(created.out).toMatch(/created tenant "beside"/);
    const token = created.out.trim().split('\n').at(-1)!;
    expect(token).toMatch(/^dnsp_/);
    const answer = await records(apiUrl, token);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('"zone":"example.test"');
    expect((await records(apiUrl, `${token}x`)).status).toBe(401);

    const listed = await cli(['tenant', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.out).toMatch(/^beside +- +example\.test/m);
    // migrate beside it too
    const migrated = await cli(['migrate']);
    expect(migrated.code).toBe(0);
    expect(migrated.out).toContain('the database is up to date');
    // the server is unharmed
    expect(child.exitCode).toBeNull();

    // without the file (moved away): a clear error naming the ways out, nothing started
    const saved = readFileSync(connFile);
    unlinkSync(connFile);
    const refused = await cli(['tenant', 'list']);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(`is already in use by another dnsplane process (pid ${child.pid}), which publishes no connection file (${connFile})`);
    expect(refused.err).toContain(`stop that process (pid ${child.pid}) and run the command again, or set DATABASE_URL`);
    expect(refused.err).not.toContain(info.url.split('@')[0]!.split(':')[2]!); // never the password
    writeFileSync(connFile, saved, { mode: 0o600 });

    // clean stop: the file goes with the server
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(connFile)).toBe(false);

    // a stale file (its server gone): the command starts its own embedded Postgres as usual and drops it
    writeFileSync(connFile, JSON.stringify({ url: 'postgres://dnsplane:stale@127.0.0.1:1/dnsplane', pid: child.pid }), { mode: 0o600 });
    const after = await cli(['tenant', 'list']);
    expect(after.err).toBe('');
    expect(after.code).toBe(0);
    expect(after.out).toMatch(/^beside +- +example\.test/m);
    expect(existsSync(connFile)).toBe(false);
  }, 600_000);
});
