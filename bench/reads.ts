/**
 * bench/reads — `npm run bench:reads`: how fast one server answers the hot reads. Not part of `npm test`.
 *
 * A server process (real Postgres, the simulator, a 1,000-record zone owned by one tenant) and this
 * process as 16 concurrent clients speaking Connect JSON over HTTP/1.1 with keep-alive (raw
 * http.request: answers read as text, never decoded, so the client costs little), each for
 * READS_SECONDS (default 5):
 *   1. Records not-modified polls (the caller sends the generation it has);
 *   2. Records full answers of the zone;
 *   3. the webhook's GET /records (HTTP Basic tenant:token);
 *   4. beside them, the raw SELECT of the same rows (store.listRecords, 16 connections), in the same run.
 * READS_PROFILE=dir starts the server with `node --cpu-prof --cpu-prof-dir=dir`.
 * Environment: DATABASE_URL (a server to create the bench database on; required), READS_SECONDS,
 * READS_CLIENTS (16), READS_RECORDS (1000).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { positiveEnv } from './lib.js';

const num = positiveEnv;
const SECONDS = num('READS_SECONDS', 5);
const CLIENTS = num('READS_CLIENTS', 16);
const RECORDS = num('READS_RECORDS', 1000);
const ZONE = 'reads.test';

interface Ready {
  url: string;
  webhookUrl: string;
  token: string;
  databaseUrl: string;
  generation: string;
}

/** The server side: its own database, simulator and server; prints one JSON line when ready. */
async function serve(): Promise<void> {
  const { startServerOn } = await import('../test/helpers/sim-server.js');
  const { benchDatabase } = await import('./lib.js');
  const { createTenant } = await import('../src/core/tenants/tenants.js');
  const { records } = await import('../src/core/records/records.js');
  const { OvhSimulator } = await import('../src/ovhsim/index.js');
  const store = await import('../src/store/index.js');
  if (!process.env['DATABASE_URL']) throw new Error('DATABASE_URL is required');
  const db = await benchDatabase('dnsplane_reads');
  const databaseUrl = db.url!;
  const sim = await OvhSimulator.start({
    zones: { [ZONE]: Array.from({ length: RECORDS }, (_, i) => ({ subDomain: `h${i}`, fieldType: 'A', target: `10.0.${i >> 8}.${i & 255}`, ttl: 300 })) },
  });
  // Its own data directory and the simulator's CA file, removed by close().
  const server = await startServerOn(sim, databaseUrl, { DNSPLANE_ZONES: ZONE, DNSPLANE_DRIFT_INTERVAL: 'off' });
  const { tenant, token } = await createTenant(server.ctx.pool, { name: 'reads', zones: [ZONE] });
  // Sync once, then give every set to the tenant (one generation bump), as if it had created them.
  const [first] = await records(server.ctx, tenant, { zones: [ZONE], knownGenerations: new Map(), includeForeign: true });
  let generation = 0n;
  await store.withZoneLock(server.ctx.pool, ZONE, { lockTimeoutMs: 10_000 }, async (tx) => {
    for (const e of first!.endpoints) await store.setOwner(tx, { zone: ZONE, dnsName: e.dnsName, recordType: e.recordType, tenantId: tenant.id });
    generation = await store.bumpGeneration(tx, ZONE);
    await store.notifyZoneChanged(tx, ZONE, generation);
  });
  const ready: Ready = { url: server.url, webhookUrl: server.webhookUrl ?? '', token, databaseUrl, generation: generation.toString() };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  const stop = async () => {
    await server.close();
    await sim.stop();
    await db.drop();
    process.exit(0);
  };
  // Each line on stdin asks for the CPU time this process has used so far (µs, user + system).
  createInterface({ input: process.stdin }).on('line', () => {
    const u = process.cpuUsage();
    process.stdout.write(`${u.user + u.system}\n`);
  });
  process.stdin.on('end', () => void stop());
}

/** Runs `fn` in CLIENTS loops for SECONDS; returns completed calls per second and the count. */
async function rate(fn: () => Promise<void>): Promise<{ perSecond: number; done: number }> {
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        await fn();
        done++;
      }
    }),
  );
  return { perSecond: done / ((performance.now() - started) / 1000), done };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });

function post(url: string, headers: Record<string, string>, body: string, check: (status: number, text: string) => void, method = 'POST'): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers: { ...headers, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          check(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
          resolve();
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(method === 'POST' ? body : undefined);
  });
}

async function main(): Promise<void> {
  if (process.argv.includes('--serve')) return serve();
  const profile = process.env['READS_PROFILE'];
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), '--import', 'tsx', self, '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: process.env,
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => (waiting.length ? waiting.shift()!(l) : lines.push(l)));
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      if (lines.length) return resolve(lines.shift()!);
      waiting.push(resolve);
      child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
    });
  const serverCpu = async (): Promise<number> => {
    child.stdin!.write('cpu\n');
    return Number(await nextLine());
  };
  const line = await nextLine();
  const ready = JSON.parse(line) as Ready;
  const rpc = `${ready.url}/dnsplane.v1.ZoneService/Records`;
  const bearer = { authorization: `Bearer ${ready.token}` };
  const expect = (what: string, ok: (text: string) => boolean) => (status: number, text: string) => {
    if (status !== 200 || !ok(text)) throw new Error(`${what}: HTTP ${status}: ${text.slice(0, 300)}`);
  };
  const notModified = JSON.stringify({ zones: [ZONE], knownGenerations: { [ZONE]: ready.generation } });
  const full = JSON.stringify({ zones: [ZONE] });
  const pool = new pg.Pool({ connectionString: ready.databaseUrl, max: CLIENTS });
  const store = await import('../src/store/index.js');
  try {
    const figures: [string, number, number, number][] = [];
    const basic = {
      authorization: `Basic ${Buffer.from(`reads:${ready.token}`).toString('base64')}`,
      accept: 'application/external.dns.webhook+json;version=1',
    };
    const phases: [string, () => Promise<void>][] = [
      [
        'Records notModified polls/s',
        () =>
          post(
            rpc,
            bearer,
            notModified,
            expect('notModified', (t) => t.includes('"notModified":true')),
          ),
      ],
      [
        'Records full answer/s',
        () =>
          post(
            rpc,
            bearer,
            full,
            expect('full', (t) => t.length > RECORDS * 40),
          ),
      ],
      ['raw SELECT of the same rows/s', async () => void (await store.listRecords(pool, ZONE))],
      [
        'webhook GET /records/s',
        () =>
          post(
            `${ready.webhookUrl}/records`,
            basic,
            '',
            expect('webhook', (t) => t.length > RECORDS * 40),
            'GET',
          ),
      ],
    ];
    const only = process.env['READS_ONLY'];
    for (const [name, fn] of phases) {
      if (only && !name.includes(only)) continue;
      const cpu0 = await serverCpu();
      const own0 = process.cpuUsage();
      const { perSecond, done } = await rate(fn);
      const own = process.cpuUsage(own0);
      figures.push([name, perSecond, ((await serverCpu()) - cpu0) / done, (own.user + own.system) / done]);
    }
    const w = Math.max(...figures.map(([k]) => k.length));
    console.log(
      `${CLIENTS} clients (raw HTTP/1.1, answers read as text, not decoded), ${SECONDS} s each, zone of ${RECORDS} records; server and bench CPU per call (the SELECT runs in the bench, not the server)`,
    );
    for (const [k, v, cpu, own] of figures)
      console.log(
        `${k.padEnd(w)}  ${v.toFixed(0).padStart(7)}   server ${(cpu / 1000).toFixed(3).padStart(8)} ms CPU/call   bench ${(own / 1000).toFixed(3).padStart(8)} ms CPU/call`,
      );
    const answers = figures.find(([k]) => k.startsWith('Records full'));
    const sel = figures.find(([k]) => k.startsWith('raw SELECT'));
    if (answers && sel) console.log(`${'full Records / raw SELECT'.padEnd(w)}  ${(answers[1] / sel[1]).toFixed(2).padStart(7)}`);
  } finally {
    await pool.end();
    agent.destroy();
    child.stdin!.end();
    await new Promise((r) => child.once('exit', r));
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
