import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, redactUrl } from '../../src/store/db.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { getZone, ensureZones, bumpGeneration } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/hold-embedded.ts', import.meta.url));

/** Live processes whose working directory is the given cluster directory (a postmaster chdirs there). */
function serversOn(pgDir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && readlinkSync(`/proc/${entry}/cwd`) === pgDir) out.push(Number(entry));
    } catch {
      // gone, or not readable
    }
  }
  return out;
}

/** As root the server runs as "postgres"; an unrelated process of that user is what makes Postgres refuse. */
function postgresUserIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
  };
}

describe('openDatabase with a DATABASE_URL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ max: 2 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('opens a pool on it and starts nothing', async () => {
    const logs: string[] = [];
    const opened = await openDatabase({ databaseUrl: db.url, dataDir: '/nonexistent/never-created', log: (m) => logs.push(m) });
    try {
      expect(opened.embedded).toBe(false);
      expect(opened.url).toBe(db.url);
      const password = new URL(db.url).password;
      if (password !== '') expect(opened.displayUrl).not.toContain(password);
      const { rows } = await opened.pool.query<{ db: string }>('SELECT current_database() AS db');
      expect(rows[0]?.db).toBe(db.name);
      expect(existsSync('/nonexistent/never-created')).toBe(false);
    } finally {
      await opened.close();
      await opened.close(); // idempotent
    }
  });

  it('fails fast with a redacted URL when the server is unreachable', async () => {
    const err: unknown = await openDatabase({ databaseUrl: 'postgres://u:s3cret@127.0.0.1:1/x', dataDir: '/tmp' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('127.0.0.1:1');
    expect((err as Error).message).not.toContain('s3cret');
    expect(redactUrl('postgres://u:s3cret@h:5/d')).toBe('postgres://u:***@h:5/d');
  });
});

describe('openDatabase, embedded', () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(path.join(tmpdir(), 'dnsplane-embedded-test-'));
    chmodSync(base, 0o755); // as root, Postgres runs as "postgres" and must reach the data dir
  });
  afterAll(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('keeps its data across a close and a reopen', async () => {
    const dataDir = path.join(base, 'persist');
    const logs: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log = (msg: string, fields?: Record<string, unknown>): void => {
      logs.push({ msg, fields });
    };

    const first = await openDatabase({ dataDir, log });
    let firstPort: string;
    try {
      expect(first.embedded).toBe(true);
      const u = new URL(first.url);
      expect(u.hostname).toBe('127.0.0.1');
      expect(u.username).toBe('dnsplane');
      expect(u.pathname).toBe('/dnsplane');
      firstPort = u.port;
      expect(first.displayUrl).toContain(':***@');
      expect((await migrate(first.pool)).applied).toEqual((await loadMigrations()).map((m) => `${m.version}_${m.name}`));
      await ensureZones(first.pool, ['persist.example']);
      await bumpGeneration(first.pool, 'persist.example');
      const { rows } = await first.pool.query<{ addr: string; sock: string }>(
        "SELECT current_setting('listen_addresses') AS addr, current_setting('unix_socket_directories') AS sock",
      );
      expect(rows[0]).toEqual({ addr: '127.0.0.1', sock: '' });
    } finally {
      await first.close();
    }
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    expect(existsSync(path.join(dataDir, 'pg.lock'))).toBe(false);

    // the password: generated once, 0600, never logged
    const passwordFile = path.join(dataDir, 'pg.password');
    const password = readFileSync(passwordFile, 'utf8').trim();
    expect(password.length).toBeGreaterThanOrEqual(24);
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(logs)).not.toContain(password);
    expect(logs.some((l) => /initialising/.test(l.msg))).toBe(true);

    logs.length = 0;
    const second = await openDatabase({ dataDir, log });
    try {
      expect(logs.some((l) => /initialising/.test(l.msg))).toBe(false);
      expect(new URL(second.url).password).toBe(encodeURIComponent(password));
      expect((await migrate(second.pool)).applied).toEqual([]);
      expect((await getZone(second.pool, 'persist.example'))?.generation).toBe(1n);
      void firstPort; // a new free port is chosen at each start (usually different; not asserted)
    } finally {
      await second.close();
    }
    expect(serversOn(path.join(dataDir, 'pg'))).toEqual([]);
    expect(JSON.stringify(logs)).not.toContain(password);
  });

  it('refuses a second open of the same data dir while it is open', async () => {
    const dataDir = path.join(base, 'twice');
    const db = await openDatabase({ dataDir });
    try {
      await expect(openDatabase({ dataDir })).rejects.toThrow(/already in use by this process/);
      // the first one is unharmed
      const { rows } = await db.pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  it('recovers after a killed run: orphaned server stopped, data kept', async () => {
    const dataDir = path.join(base, 'killed');
    const pgDir = path.join(dataDir, 'pg');
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let orphanPid = 0;
    try {
      orphanPid = await waitReady(child);
      child.kill('SIGKILL'); // no cleanup of any kind
      await new Promise<void>((r) => child.once('exit', () => r()));
      // the postmaster outlives its parent: that is the situation to recover from
      expect(serversOn(pgDir)).toContain(orphanPid);
      expect(existsSync(path.join(dataDir, 'pg.lock'))).toBe(true);

      const logs: string[] = [];
      const db = await openDatabase({ dataDir, log: (m) => logs.push(m) });
      try {
        expect(logs.some((m) => /previous run that is gone/.test(m))).toBe(true);
        expect(logs.some((m) => /orphaned server/.test(m))).toBe(true);
        const { rows } = await db.pool.query<{ note: string }>('SELECT note FROM survivor');
        expect(rows).toEqual([{ note: 'written before the kill' }]);
      } finally {
        await db.close();
      }
      expect(serversOn(pgDir)).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (orphanPid > 0) {
        try {
          process.kill(orphanPid, 'SIGQUIT');
        } catch {
          // already gone (expected)
        }
      }
    }
  });

  it('removes a stale postmaster.pid whose pid is dead or belongs to another process', async () => {
    const dataDir = path.join(base, 'stale');
    const pgDir = path.join(dataDir, 'pg');
    const db = await openDatabase({ dataDir });
    await db.close();
    const pidFile = path.join(pgDir, 'postmaster.pid');
    const fake = (pid: number): string => `${pid}\n${pgDir}\n1764465613\n5432\n\n127.0.0.1\n  1234567     12345\nready   \n`;

    // 1. a pid that does not exist
    writeFileSync(pidFile, fake(4_000_000));
    let logs: string[] = [];
    let again = await openDatabase({ dataDir, log: (m) => logs.push(m) });
    await again.close();
    expect(logs.some((m) => /stale postmaster\.pid \(its process is gone\)/.test(m))).toBe(true);

    // 2. a live, unrelated process (pid reuse): Postgres alone would refuse to start
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore', ...postgresUserIds() });
    try {
      writeFileSync(pidFile, fake(sleeper.pid ?? 0));
      logs = [];
      again = await openDatabase({ dataDir, log: (m) => logs.push(m) });
      await again.close();
      expect(logs.some((m) => /belongs to another process/.test(m))).toBe(true);
      expect(sleeper.exitCode).toBeNull(); // untouched
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('refuses a non-empty directory that holds no cluster, and a cluster without its password', async () => {
    const junk = path.join(base, 'junk');
    rmSync(junk, { recursive: true, force: true });
    mkdirSync(path.join(junk, 'pg'), { recursive: true });
    writeFileSync(path.join(junk, 'pg', 'something'), 'x');
    await expect(openDatabase({ dataDir: junk })).rejects.toThrow(/holds no Postgres cluster/);

    const persist = path.join(base, 'persist');
    if (existsSync(path.join(persist, 'pg', 'PG_VERSION'))) {
      const pw = readFileSync(path.join(persist, 'pg.password'));
      rmSync(path.join(persist, 'pg.password'));
      try {
        await expect(openDatabase({ dataDir: persist })).rejects.toThrow(/password file .* is missing/);
      } finally {
        writeFileSync(path.join(persist, 'pg.password'), pw, { mode: 0o600 });
      }
    }
  });
});

function waitReady(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`child not ready: ${out} ${err}`)), 240_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /READY (\d+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited (${code}) before ready: ${out} ${err}`));
    });
  });
}
