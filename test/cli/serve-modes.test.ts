/**
 * When `dnsplane serve` runs the demo, talks to OVH, or refuses to start: the whole matrix of
 * DATABASE_URL (unset, set) x OVH_* (none, partial, all) x demo flag (unset, DNSPLANE_DEMO=true,
 * --demo), plus DNSPLANE_DEMO=false.
 *
 * - Decided by loadConfig (every cell, fast).
 * - Every refused cell through the real binary: exit status 1, a message naming the missing
 *   variables and the way to ask for the demo, and nothing written: a DATABASE_URL database stays
 *   without a single table, an embedded data directory stays empty.
 * - The demo on a DATABASE_URL: refused on a database that manages other zones (nothing written),
 *   never touching a tenant it did not create, its tokens and DNS port the same across restarts
 *   (--new-tokens: new ones), the banner naming the database (never its password) and the endpoint.
 */
import { execFile, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig, type Env } from '../../src/config/config.js';
import { authenticate, createTenant } from '../../src/core/tenants/tenants.js';
import { DEMO_TOKENS_FILE, DEMO_ZONE, demoTokens } from '../../src/demo/demo.js';
import { DEMO_TSIG_FILE, demoTsigKey } from '../../src/demo/dns.js';
import { tsigKeyring } from '../../src/core/keys/tsig.js';
import { deleteTsigKey } from '../../src/core/credentials/tsig-admin.js';
import { startServer } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { dumpText, snapshot } from '../helpers/snapshot.js';
import { captureLogger } from '../helpers/log-capture.js';

const run = promisify(execFile);
const BIN = path.resolve('bin/dnsplane-dev.js');
const OVH_ALL = { OVH_APPLICATION_KEY: 'ak', OVH_APPLICATION_SECRET: 'as', OVH_CONSUMER_KEY: 'ck' };
const OVH_PARTIAL = { OVH_APPLICATION_KEY: 'ak' };
const MISSING_PARTIAL = 'OVH_APPLICATION_SECRET, OVH_CONSUMER_KEY';
const ALL_NAMES = 'OVH_APPLICATION_KEY, OVH_APPLICATION_SECRET, OVH_CONSUMER_KEY';
const DB = 'postgres://u:pw@db.internal:5432/prod';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'dnsplane-serve-modes-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('loadConfig decides: demo, OVH, or refuse', () => {
  const mode = (env: Env) => {
    try {
      const c = loadConfig({ DNSPLANE_DATA_DIR: '/tmp/x', ...env });
      return c.ovh.mode === 'unconfigured' ? `refuse: ${c.ovh.field}: ${c.ovh.rule}` : c.ovh.mode;
    } catch (e) {
      return `throws: ${(e as Error).message}`;
    }
  };

  it('no DATABASE_URL', () => {
    expect(mode({})).toBe('simulator'); // npm start on a fresh clone
    expect(mode({ DNSPLANE_DEMO: 'true' })).toBe('simulator');
    expect(mode({ ...OVH_ALL })).toBe('remote');
    expect(mode({ ...OVH_PARTIAL })).toMatch(
      new RegExp(`^throws: ${MISSING_PARTIAL}: not set while OVH_APPLICATION_KEY is: .*DNSPLANE_DEMO=true \\(or dnsplane serve --demo\\)`),
    );
    expect(mode({ ...OVH_PARTIAL, DNSPLANE_DEMO: 'true' })).toMatch(
      new RegExp(`^throws: ${MISSING_PARTIAL}: not set .*for the demo, unset every OVH_\\* variable`),
    );
    expect(mode({ ...OVH_ALL, DNSPLANE_DEMO: 'true' })).toMatch(
      /^throws: DNSPLANE_DEMO: true runs the in-process OVH simulator, which cannot go with the OVH credentials/,
    );
    expect(mode({ DNSPLANE_DEMO: 'false' })).toMatch(new RegExp(`^refuse: ${ALL_NAMES}: not set and DNSPLANE_DEMO is false`));
  });

  it('DATABASE_URL set', () => {
    expect(mode({ DATABASE_URL: DB })).toMatch(
      new RegExp(`^refuse: ${ALL_NAMES}: not set while DATABASE_URL is: .*DNSPLANE_DEMO=true \\(or dnsplane serve --demo\\)`),
    );
    expect(mode({ DATABASE_URL: DB, DNSPLANE_DEMO: 'true' })).toBe('simulator');
    expect(mode({ DATABASE_URL: DB, ...OVH_ALL })).toBe('remote');
    expect(mode({ DATABASE_URL: DB, ...OVH_PARTIAL })).toMatch(new RegExp(`^throws: ${MISSING_PARTIAL}: not set while OVH_APPLICATION_KEY is`));
    expect(mode({ DATABASE_URL: DB, ...OVH_PARTIAL, DNSPLANE_DEMO: 'true' })).toMatch(new RegExp(`^throws: ${MISSING_PARTIAL}: not set`));
    expect(mode({ DATABASE_URL: DB, ...OVH_ALL, DNSPLANE_DEMO: 'true' })).toMatch(/^throws: DNSPLANE_DEMO: true runs/);
    expect(mode({ DATABASE_URL: DB, DNSPLANE_DEMO: 'maybe' })).toBe('throws: DNSPLANE_DEMO: must be true or false, got "maybe"');
  });
});

/** A database with no tables at all (not even migrated), to prove a refused start wrote nothing. */
async function emptyDatabase(): Promise<{ url: string; tables(): Promise<number>; drop(): Promise<void> }> {
  const admin = inject('dnsplaneAdminUrl');
  const name = `dnsplane_empty_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const withAdmin = async (sql: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await withAdmin(`CREATE DATABASE ${name}`);
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    url,
    async tables() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const { rows } = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'public'::regnamespace");
        return rows[0]!.n;
      } finally {
        await c.end();
      }
    },
    drop: () => withAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Runs `dnsplane serve ARGS` with exactly this environment (plus PATH and HOME); it must exit. */
async function serveExit(env: Record<string, string>, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [BIN, 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', DNSPLANE_LISTEN: '127.0.0.1:0', ...env },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('the real binary refuses, writing nothing', () => {
  let empty: Awaited<ReturnType<typeof emptyDatabase>>;
  beforeAll(async () => {
    empty = await emptyDatabase();
  });
  afterAll(async () => {
    await empty?.drop();
  });

  const cases: Array<{ name: string; db: boolean; env: Record<string, string>; args?: string[]; message: RegExp }> = [
    {
      name: 'DATABASE_URL, no OVH_*',
      db: true,
      env: {},
      message: new RegExp(
        `^dnsplane serve: ${ALL_NAMES}: not set while DATABASE_URL is: .*ask for the demo on purpose with DNSPLANE_DEMO=true \\(or dnsplane serve --demo\\)`,
      ),
    },
    {
      name: 'DATABASE_URL, partial OVH_*',
      db: true,
      env: OVH_PARTIAL,
      message: new RegExp(`^dnsplane serve: ${MISSING_PARTIAL}: not set while OVH_APPLICATION_KEY is`),
    },
    {
      name: 'DATABASE_URL, partial OVH_*, DNSPLANE_DEMO=true',
      db: true,
      env: { ...OVH_PARTIAL, DNSPLANE_DEMO: 'true' },
      message: new RegExp(`^dnsplane serve: ${MISSING_PARTIAL}: not set`),
    },
    {
      name: 'DATABASE_URL, partial OVH_*, --demo',
      db: true,
      env: OVH_PARTIAL,
      args: ['--demo'],
      message: new RegExp(`^dnsplane serve: ${MISSING_PARTIAL}: not set`),
    },
    {
      name: 'DATABASE_URL, all OVH_*, DNSPLANE_DEMO=true',
      db: true,
      env: { ...OVH_ALL, DNSPLANE_DEMO: 'true' },
      message: /^dnsplane serve: DNSPLANE_DEMO: true runs the in-process OVH simulator/,
    },
    {
      name: 'DATABASE_URL, all OVH_*, --demo',
      db: true,
      env: OVH_ALL,
      args: ['--demo'],
      message: /^dnsplane serve: DNSPLANE_DEMO: true runs the in-process OVH simulator/,
    },
    {
      name: 'DATABASE_URL, DNSPLANE_DEMO=false',
      db: true,
      env: { DNSPLANE_DEMO: 'false' },
      message: new RegExp(`^dnsplane serve: ${ALL_NAMES}: not set and DNSPLANE_DEMO is false`),
    },
    {
      name: 'embedded, partial OVH_*',
      db: false,
      env: OVH_PARTIAL,
      message: new RegExp(`^dnsplane serve: ${MISSING_PARTIAL}: not set while OVH_APPLICATION_KEY is`),
    },
    {
      name: 'embedded, partial OVH_*, DNSPLANE_DEMO=true',
      db: false,
      env: { ...OVH_PARTIAL, DNSPLANE_DEMO: 'true' },
      message: new RegExp(`^dnsplane serve: ${MISSING_PARTIAL}: not set`),
    },
    { name: 'embedded, all OVH_*, --demo', db: false, env: OVH_ALL, args: ['--demo'], message: /^dnsplane serve: DNSPLANE_DEMO: true runs/ },
    {
      name: 'embedded, no OVH_*, DNSPLANE_DEMO=false',
      db: false,
      env: { DNSPLANE_DEMO: 'false' },
      message: new RegExp(`^dnsplane serve: ${ALL_NAMES}: not set and DNSPLANE_DEMO is false`),
    },
    {
      name: 'embedded, all OVH_*, --new-tokens',
      db: false,
      env: OVH_ALL,
      args: ['--new-tokens'],
      message: /^dnsplane serve: --new-tokens: concerns the demo's tokens only/,
    },
  ];

  it.concurrent.each(cases)('$name: exit 1, the message, nothing written', async (c) => {
    const dataDir = tempDir();
    const env: Record<string, string> = { DNSPLANE_DATA_DIR: dataDir, ...c.env };
    if (c.db) env['DATABASE_URL'] = empty.url;
    const r = await serveExit(env, c.args);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(c.message);
    expect(r.stdout).toBe('');
    if (c.db) expect(await empty.tables()).toBe(0);
    expect(readdirSync(dataDir)).toEqual([]);
  });
});

describe('the demo on a DATABASE_URL', () => {
  let db: TestDatabase;
  const log = pino({ level: 'silent' });
  const config = (dataDir: string, env: Env = {}) =>
    loadConfig({
      DATABASE_URL: db.url,
      DNSPLANE_DEMO: 'true',
      DNSPLANE_DATA_DIR: dataDir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_DRIFT_INTERVAL: 'off',
      ...env,
    });

  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('is refused on a database that manages other zones: the demo zone is not registered, nothing is written', async () => {
    await store.ensureZones(db.pool, ['real.example']);
    const { token: adminToken } = await createTenant(db.pool, { name: 'admin', zones: [], admin: true });
    const before = { ...(await snapshot(db.pool)), migrations: (await db.pool.query('SELECT version FROM schema_migrations ORDER BY 1')).rows };
    const dataDir = tempDir();
    await expect(startServer(config(dataDir), log)).rejects.toThrow(
      /^demo mode: Postgres [^ ]+\/dnsplane_t_\w+ \(DATABASE_URL\) already manages other zones \(real\.example\); the demo will not register example\.test beside them/,
    );
    expect({ ...(await snapshot(db.pool)), migrations: (await db.pool.query('SELECT version FROM schema_migrations ORDER BY 1')).rows }).toEqual(before);
    expect((await authenticate(db.pool, adminToken)).name).toBe('admin');
    expect(readdirSync(dataDir)).toEqual([]);
    await db.pool.query("DELETE FROM zones WHERE name = 'real.example'");
    await db.pool.query("DELETE FROM tenants WHERE name = 'admin'");
  });

  it('leaves a tenant it did not create alone; keeps its own tokens and DNS port across restarts; --new-tokens replaces them', async () => {
    const { token: realAdmin } = await createTenant(db.pool, { name: 'admin', zones: [], admin: true });
    const dataDir = tempDir();

    const first = await startServer(config(dataDir), log);
    let simPorts: number[];
    let doorPort: number;
    let demoToken: string;
    let tsigSecret: string;
    try {
      expect(first.databaseLabel).toMatch(/^Postgres [^ ]+:\d+\/dnsplane_t_\w+ \(DATABASE_URL\)$/);
      expect(first.ovhLabel).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/1\.0 \(in-process simulator\)$/);
      const t = await demoTokens(first.ctx.pool, dataDir, { newTokens: false, log });
      expect(t.leftAlone).toEqual(['admin']);
      expect(t.admin).toBeUndefined();
      expect(t.kept).toBe(false);
      demoToken = t.demo!;
      expect((await authenticate(db.pool, demoToken)).name).toBe('demo');
      expect((await authenticate(db.pool, realAdmin)).name).toBe('admin'); // not rotated
      const { rows } = await db.pool.query<{ name: string; demo: boolean }>('SELECT name, demo FROM tenants ORDER BY name');
      expect(rows).toEqual([
        { name: 'admin', demo: false },
        { name: 'demo', demo: true },
      ]);
      expect((await store.listZones(db.pool)).map((z) => z.name)).toEqual([DEMO_ZONE]);
      // The token file is the one place the token is kept: 0600; the database has its hash only.
      const file = path.join(dataDir, DEMO_TOKENS_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ demo: demoToken });
      expect(await dumpText(db.pool)).not.toContain(demoToken.slice(5));
      simPorts = first.simulator!.dnsServers.map((s) => s.port);
      doorPort = first.dns!.port;
      // The demo's ACME-only TSIG key: its secret kept in a 0600 file, sealed in the database.
      const key = await demoTsigKey(first.ctx, dataDir, { newKey: false, log });
      expect(key).toMatchObject({ name: 'demo-acme.dnsplane', algorithm: 'hmac-sha256' });
      tsigSecret = key!.secret;
      expect(statSync(path.join(dataDir, DEMO_TSIG_FILE)).mode & 0o777).toBe(0o600);
      expect(await dumpText(db.pool)).not.toContain(tsigSecret);
      expect(await tsigKeyring(first.ctx).find('demo-acme.dnsplane')).toMatchObject({ acmeOnly: true, tenant: { name: 'demo' } });
    } finally {
      await first.close();
    }

    const second = await startServer(config(dataDir), log);
    try {
      expect(second.simulator!.dnsServers.map((s) => s.port)).toEqual(simPorts);
      expect(second.dns!.port).toBe(doorPort);
      const t = await demoTokens(second.ctx.pool, dataDir, { newTokens: false, log });
      expect(t).toEqual({ admin: undefined, demo: demoToken, leftAlone: ['admin'], kept: true });
      const renewed = await demoTokens(second.ctx.pool, dataDir, { newTokens: true, log });
      expect(renewed.demo).not.toBe(demoToken);
      expect(renewed.kept).toBe(false);
      await expect(authenticate(db.pool, demoToken)).rejects.toThrow();
      expect((await authenticate(db.pool, renewed.demo!)).name).toBe('demo');
      expect((await authenticate(db.pool, realAdmin)).name).toBe('admin');
      expect((await demoTsigKey(second.ctx, dataDir, { newKey: false, log }))?.secret).toBe(tsigSecret);
      const rotated = await demoTsigKey(second.ctx, dataDir, { newKey: true, log });
      expect(rotated?.secret).not.toBe(tsigSecret);
      expect((await tsigKeyring(second.ctx).find('demo-acme.dnsplane'))?.secret.toString('base64')).toBe(rotated?.secret);
      // Sealed with this data dir's secrets key: the next test's demo, on another data dir, would not start beside it.
      await deleteTsigKey({ pool: second.ctx.pool, actor: null }, 'demo-acme.dnsplane');
    } finally {
      await second.close();
    }
  });

  it('the DNS door port of the last start taken by another program: starts on another one (once), keeps it; both simulated name servers keep their ports', async () => {
    const dataDir = tempDir();
    const first = await startServer(config(dataDir), log);
    const doorPort = first.dns!.port;
    const simPorts = first.simulator!.dnsServers.map((s) => s.port);
    await first.close();
    expect(readFileSync(path.join(dataDir, 'ovhsim', 'dns-port'), 'utf8')).toBe(`${simPorts.join(' ')}\n`);

    // Another program took the door's port, UDP and TCP, while the demo was stopped.
    const tcp = net.createServer();
    await new Promise<void>((resolve, reject) => tcp.once('error', reject).listen(doorPort, '127.0.0.1', () => resolve()));
    const udp = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => udp.once('error', reject).bind(doorPort, '127.0.0.1', () => resolve()));
    const captured = captureLogger('warn');
    let movedTo: number;
    try {
      const second = await startServer(config(dataDir), captured.log);
      try {
        movedTo = second.dns!.port;
        expect(movedTo).not.toBe(doorPort);
        expect(second.simulator!.dnsServers.map((s) => s.port)).toEqual(simPorts);
        expect(captured.lines.filter((l) => /of the last start (is|are) taken/.test(l.msg)).map((l) => [l.msg, l['ports']])).toEqual([
          ['demo: the DNS door port of the last start is taken; using another one', [doorPort]],
        ]);
        // The door answers on the port it moved to (its metrics registered once, and counting).
        expect(await second.metrics.registry.getSingleMetric('dnsplane_dns_requests_total')).toBeDefined();
      } finally {
        await second.close();
      }
    } finally {
      tcp.close();
      udp.close();
    }
    const third = await startServer(config(dataDir), log);
    try {
      expect(third.dns!.port).toBe(movedTo);
      expect(third.simulator!.dnsServers.map((s) => s.port)).toEqual(simPorts);
    } finally {
      await third.close();
    }
  });

  it('the real binary: --demo on DATABASE_URL starts; the banner names the database without its password, and the OVH endpoint', async () => {
    const dataDir = tempDir();
    const u = new URL(db.url);
    // The password must be there to be hidden: the test server's own (embedded Postgres), or, for a
    // server that trusts local connections (DATABASE_URL on this machine), one it will not check.
    if (u.password === '') u.password = 'not-a-real-secret';
    const child = spawn(process.execPath, [BIN, 'serve', '--demo'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/',
        DATABASE_URL: u.toString(),
        DNSPLANE_DATA_DIR: dataDir,
        DNSPLANE_LISTEN: '127.0.0.1:0',
        DNSPLANE_LOG_LEVEL: 'info',
        DNSPLANE_DRIFT_INTERVAL: 'off',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      for (let i = 0; i < 2400 && !/# what the simulator published\n/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(/dnsplane is running in demo mode/);
      expect(out).toMatch(new RegExp(`  database:  Postgres ${u.hostname}:${u.port || 5432}/${db.name} \\(DATABASE_URL\\)\\n`));
      expect(out).toMatch(/  OVH:       https:\/\/127\.0\.0\.1:\d+\/1\.0 \(in-process simulator\)\n/);
      expect(out).toMatch(/  DNS door:  127\.0\.0\.1 port \d+ \(udp\+tcp\)/);
      expect(out).toMatch(/\| nsupdate -y hmac-sha256:demo-acme\.dnsplane:[A-Za-z0-9+/]+=*\n/);
      expect(out).toMatch(/"msg":"dnsplane is serving Connect, gRPC and gRPC-Web/);
      expect(out).toMatch(/"database":"Postgres [^"]+ \(DATABASE_URL\)","ovh":"https:[^"]+ \(in-process simulator\)"/);
      expect(out).not.toContain(u.password);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
