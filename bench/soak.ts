/**
 * bench/soak — `npm run soak`: a longer run of issue 3's guarantees under random OVH faults. Not part
 * of `npm test`.
 *
 * R dnsplane servers (in this process, one database), T tenants, Z zones, W workers applying for SOAK_SECONDS:
 * each worker picks a tenant, a replica and a zone, then either applies a desired state inline (UPSERT_ONLY
 * or SYNC, its own names plus names every tenant claims) or plans then applies the stored plan (stale when
 * the zone moved meanwhile). Meanwhile the simulator injects a random fault every 300 ms (5xx, 408 HTML,
 * 429 with Retry-After, dropped connections, POSTs done then dropped, id 0, hanging calls, refused
 * creations, latency) and records are changed by hand and published (drift, DNSPLANE_DRIFT_INTERVAL=1s).
 *
 * At the end (faults cleared, the zones checked for drift one last time) it checks, per zone:
 *  1. the published records of the tenants' names are the fold, in generation order, of every change an
 *     apply reported as applied;
 *  2. no record is duplicated; 3. the draft holds what is published (no half-applied draft);
 *  4. the cache equals the simulator record for record; 5. no journal row is left in_flight;
 *  6. no zone lock is held; 7. every refresh belongs to an apply journaled done or recovered, or to a recovery.
 * It prints the figures and exits 1 when a check fails.
 *
 * SOAK_KILL_SESSIONS=1 (`npm run soak -- --kill-sessions`) adds the database going away: every 0.5-3 s
 * (at random) every dnsplane session of the soak database is ended with pg_terminate_backend — the
 * stand-in for a Postgres restart or failover — while applies run (zone locks lost mid-apply, the
 * journal's pool cut, reads cut). The same checks must hold at the end, once the applies left in
 * flight are rolled back (core/zones/fence.ts: never before their holder must have stopped).
 *
 * Environment: SOAK_SECONDS=60 SOAK_REPLICAS=3 SOAK_TENANTS=6 SOAK_ZONES=2 SOAK_WORKERS=12
 *              SOAK_KILL_SESSIONS=0|1
 *              DATABASE_URL (a server to create the soak database on; otherwise an embedded Postgres)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { checkZoneDrift } from '../src/core/drift/drift.js';
import { recoverAll } from '../src/core/apply/index.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { ApplyStatus, EndpointSchema, Policy, type ZoneService, type Endpoint, type ZoneApplyResult } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type FaultEffect } from '../src/ovhsim/index.js';
import { startServer, type Server } from '../src/server/server.js';
import * as store from '../src/store/index.js';
import { answeredLines, cachedLines, foldAccepted, joined, publishedSets, recordContents } from '../test/helpers/invariants.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabaseOrEmbedded, positiveEnv, writeSimulatorCa } from './lib.js';

const num = positiveEnv;
const SECONDS = num('SOAK_SECONDS', 60);
const REPLICAS = num('SOAK_REPLICAS', 3);
const TENANTS = num('SOAK_TENANTS', 6);
const ZONE_COUNT = num('SOAK_ZONES', 2);
const WORKERS = num('SOAK_WORKERS', 12);
const ZONES = Array.from({ length: ZONE_COUNT }, (_, i) => `soak${i}.test`);
const KILL_SESSIONS = process.env.SOAK_KILL_SESSIONS === '1' || process.argv.includes('--kill-sessions');

const rnd = (n: number) => Math.floor(Math.random() * n);
const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)]!;

function ep(dnsName: string, recordType: string, targets: string[]): Endpoint {
  return create(EndpointSchema, { dnsName, recordType, targets, ttl: pick([60, 300, 300, 600]) });
}

function desiredFor(t: number, zone: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const name of ['a', 'b', 'c']) {
    if (Math.random() < 0.6)
      out.push(ep(`t${t}-${name}.${zone}`, 'A', [...new Set(Array.from({ length: 1 + rnd(3) }, () => `10.${t}.${rnd(4)}.${1 + rnd(5)}`))]));
  }
  if (Math.random() < 0.3) out.push(ep(`t${t}-txt.${zone}`, 'TXT', [`soak ${t} ${rnd(5)}`]));
  if (Math.random() < 0.5) out.push(ep(`shared-${rnd(3)}.${zone}`, 'A', [`10.${t}.9.${1 + rnd(5)}`]));
  return out;
}

const FAULTS: Array<{ method?: string; path: (z: string) => string; effect: FaultEffect }> = [
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'status', status: 500 } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'status', status: 503, apply: true } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'applyThenDrop' } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'idZero' } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'status', status: 400 } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/record`, effect: { kind: 'hang' } },
  { method: 'PUT', path: (z) => `/domain/zone/${z}/record/*`, effect: { kind: 'status', status: 502 } },
  { method: 'PUT', path: (z) => `/domain/zone/${z}/record/*`, effect: { kind: 'html', status: 408 } },
  { method: 'DELETE', path: (z) => `/domain/zone/${z}/record/*`, effect: { kind: 'applyThenDrop' } },
  { method: 'DELETE', path: (z) => `/domain/zone/${z}/record/*`, effect: { kind: 'drop' } },
  { method: 'GET', path: (z) => `/domain/zone/${z}/**`, effect: { kind: 'rateLimit', retryAfterSeconds: 1 } },
  { method: 'GET', path: (z) => `/domain/zone/${z}/**`, effect: { kind: 'drop' } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/refresh`, effect: { kind: 'status', status: 500 } },
  { method: 'POST', path: (z) => `/domain/zone/${z}/refresh`, effect: { kind: 'delay', ms: 400 } },
];

async function main(): Promise<number> {
  const started = Date.now();
  const sim = await OvhSimulator.start({
    zones: Object.fromEntries(ZONES.map((z) => [z, [{ subDomain: 'manual', fieldType: 'A', target: '198.51.100.1', ttl: 600 }]])),
  });
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-soak-'));
  const caFile = writeSimulatorCa(sim, dir);

  // The database: a fresh one on DATABASE_URL's server, or an embedded Postgres.
  const { url: dbUrl, drop: dropDb } = await benchDatabaseOrEmbedded('dnsplane_soak', path.join(dir, 'data'));

  const servers: Server[] = [];
  for (let i = 0; i < REPLICAS; i++) {
    const config = loadConfig({
      DATABASE_URL: dbUrl,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_ZONES: ZONES.join(','),
      ...simulatorEnv(sim, caFile),
      DNSPLANE_OVH_RATE: '500',
      DNSPLANE_OVH_TIMEOUT: '2s',
      DNSPLANE_DRIFT_INTERVAL: '1s',
    });
    servers.push(await startServer(config, pino({ level: 'silent' })));
  }
  const pool = servers[0]!.ctx.pool;
  const tokens: string[] = [];
  for (let t = 0; t < TENANTS; t++) tokens.push((await createTenant(pool, { name: `t${t}`, zones: ZONES })).token);
  const clients: Array<Array<Client<typeof ZoneService>>> = servers.map((s) => tokens.map((token) => zoneClientFor(s, token)));

  const accepted = new Map<string, ZoneApplyResult[]>(ZONES.map((z) => [z, []]));
  const tally = new Map<string, number>();
  const internals: string[] = [];
  const count = (k: string) => tally.set(k, (tally.get(k) ?? 0) + 1);
  const deadline = Date.now() + SECONDS * 1000;

  const worker = async () => {
    while (Date.now() < deadline) {
      const t = rnd(TENANTS);
      const zone = pick(ZONES);
      const client = clients[rnd(REPLICAS)]![t]!;
      const policy = Math.random() < 0.25 ? Policy.SYNC : Policy.UPSERT_ONLY;
      const input = { case: 'desired' as const, value: { zones: [zone], endpoints: desiredFor(t, zone) } };
      try {
        let res: Awaited<ReturnType<typeof client.apply>>;
        if (Math.random() < 0.2) {
          const p = await client.plan({ policy, input });
          await new Promise((r) => setTimeout(r, rnd(200)));
          res = await client.apply({ source: { case: 'planId', value: p.plan!.id } });
        } else {
          res = await client.apply({ source: { case: 'plan', value: { policy, input } } });
        }
        for (const z of res.zones) {
          count(`apply ${ApplyStatus[z.status]}`);
          if (z.status === ApplyStatus.APPLIED) accepted.get(z.zone)!.push(z);
        }
      } catch (e) {
        const ce = ConnectError.from(e);
        count(`error ${Code[ce.code]}${/changed since the plan|expired/.test(ce.rawMessage) ? ' (stale plan)' : ''}`);
        // An Internal error is a bug (outages answer Unavailable): show what it said.
        if (ce.code === Code.Internal || ce.code === Code.Unknown) internals.push(ce.rawMessage);
      }
    }
  };

  let faultsAdded = 0;
  let handEdits = 0;
  const chaos = setInterval(() => {
    const z = pick(ZONES);
    const f = pick(FAULTS);
    sim.faults.fail({ ...(f.method ? { method: f.method } : {}), path: f.path(z), times: 1 + rnd(2), effect: f.effect });
    faultsAdded++;
    if (Math.random() < 0.15) sim.faults.setLatency(rnd(2) * 20);
    if (Math.random() < 0.3) {
      const hand = sim.draftRecords(z).filter((r) => r.subDomain.startsWith('hand-'));
      if (hand.length > 0 && Math.random() < 0.5) {
        const r = pick(hand);
        if (Math.random() < 0.5) sim.updateRecord(z, r.id, { target: `198.51.100.${10 + rnd(200)}` });
        else sim.deleteRecord(z, r.id);
      } else {
        // A new record, never a copy of one the hand already made (the duplicate check is about dnsplane).
        const subDomain = `hand-${rnd(5)}`;
        const target = `198.51.100.${10 + rnd(200)}`;
        if (!hand.some((r) => r.subDomain === subDomain && r.target === target)) sim.addRecord(z, { subDomain, fieldType: 'A', target, ttl: 300 });
      }
      sim.publish(z);
      handEdits++;
    }
  }, 300);

  // The database going away: every dnsplane session of this database terminated, at random moments.
  let killRounds = 0;
  let sessionsKilled = 0;
  let killer: NodeJS.Timeout | undefined;
  const killerClient = KILL_SESSIONS ? new pg.Client({ connectionString: dbUrl, application_name: 'dnsplane-soak-killer' }) : undefined;
  if (killerClient) {
    killerClient.on('error', () => undefined);
    await killerClient.connect();
    const next = () => {
      killer = setTimeout(() => {
        killerClient
          .query<{ n: number }>(
            `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND application_name = 'dnsplane' AND pid <> pg_backend_pid()`,
          )
          .then(
            (r) => {
              killRounds++;
              sessionsKilled += r.rows[0]?.n ?? 0;
            },
            () => undefined,
          )
          .finally(() => {
            if (Date.now() < deadline) next();
          });
      }, 500 + rnd(2500));
    };
    next();
  }

  console.log(
    `soak: ${SECONDS}s, ${REPLICAS} replicas, ${TENANTS} tenants, ${ZONE_COUNT} zones, ${WORKERS} workers${KILL_SESSIONS ? ', every dnsplane session terminated at random' : ''}`,
  );
  await Promise.all(Array.from({ length: WORKERS }, worker));
  clearInterval(chaos);
  clearTimeout(killer);
  await killerClient?.end().catch(() => undefined);
  sim.faults.clear();

  // Quiesce: roll back what died in flight (after a lost lock, only once its holder must have
  // stopped: a few seconds), read the last hand edits.
  for (let i = 0; i < 60; i++) {
    await recoverAll(servers[0]!.ctx);
    if ((await store.listZonesWithInFlight(servers[0]!.ctx.pool)).length === 0) break;
    await new Promise((res) => setTimeout(res, 500));
  }
  for (const z of ZONES) {
    for (let i = 0; i < 5; i++) {
      const r = await checkZoneDrift(servers[0]!.ctx, z);
      if (r.status !== 'busy') break;
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  const failures: string[] = [];
  const check = (ok: boolean, what: string) => {
    console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
  };
  const refreshes = sim.calls().filter((c) => c.method === 'POST' && c.path.endsWith('/refresh') && c.status === 204);
  for (const zone of ZONES) {
    console.log(`zone ${zone}:`);
    const expected = foldAccepted(accepted.get(zone)!);
    const actual = joined(publishedSets(sim, zone, (r) => r.fieldType === 'NS' || r.subDomain === 'manual' || r.subDomain.startsWith('hand-')));
    const diff = [...new Set([...expected.keys(), ...actual.keys()])].filter((k) => expected.get(k) !== actual.get(k));
    check(
      diff.length === 0,
      `published = fold of ${accepted.get(zone)!.length} accepted applies (${expected.size} record sets)${diff.length ? `; differ: ${diff.slice(0, 5).join('; ')}` : ''}`,
    );
    const draft = sim.draftRecords(zone);
    const keys = draft.map((r) => `${r.subDomain} ${r.fieldType} ${r.target}`);
    const dups = keys.filter((k, i) => keys.indexOf(k) !== i);
    check(dups.length === 0, `no duplicate record (${draft.length} records)${dups.length ? `: ${dups.join('; ')}` : ''}`);
    check(recordContents(draft).join('\n') === recordContents(sim.publishedRecords(zone)).join('\n'), 'the draft holds what is published');
    check(JSON.stringify(await cachedLines(pool, zone)) === JSON.stringify(answeredLines(sim, zone)), 'the cache equals the simulator record for record');
    const states = await store.countJournalStates(pool, zone);
    check(states.in_flight === 0, `journal: ${states.done} done, ${states.failed} failed, ${states.recovered} recovered, ${states.in_flight} in flight`);
    const zoneRefreshes = refreshes.filter((c) => c.path === `/domain/zone/${zone}/refresh`).length;
    // No refresh without its journal row: each 204 refresh is an apply's (its row done, or recovered
    // when the database went away after its refresh) or a recovery's (which publishes the undone
    // draft), so at most done + 2 x recovered. A zombie refresh after a lost lock would break it.
    check(
      zoneRefreshes <= states.done + 2 * states.recovered,
      `${zoneRefreshes} refreshes answered 204 <= applies done + 2 x recovered (${states.done + 2 * states.recovered})`,
    );
  }
  // The servers still run: a background recovery scheduled after a lost lock (it retries with backoff)
  // may hold a zone lock for a moment. None may stay held.
  let held = -1;
  for (let i = 0; i < 60 && held !== 0; i++) {
    if (i > 0) await new Promise((res) => setTimeout(res, 500));
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 AND granted`,
      [store.ZONE_LOCK_NAMESPACE],
    );
    held = rows[0]?.n ?? 0;
  }
  check(held === 0, `no zone lock held (within 30 s)${held > 0 ? `: ${held} still held` : ''}`);
  check(internals.length === 0, `no Internal error${internals.length ? `: ${[...new Set(internals)].slice(0, 3).join(' | ')}` : ''}`);

  const byMethod = new Map<string, number>();
  for (const c of sim.calls()) byMethod.set(c.method, (byMethod.get(c.method) ?? 0) + 1);
  console.log('figures:');
  for (const [k, v] of [...tally].sort()) console.log(`  ${k.padEnd(40)} ${v}`);
  console.log(`  OVH calls                                ${[...byMethod].map(([m, n]) => `${m} ${n}`).join(', ')}`);
  console.log(`  faults injected                          ${faultsAdded}`);
  console.log(`  hand edits published                     ${handEdits}`);
  if (KILL_SESSIONS) console.log(`  database sessions terminated             ${sessionsKilled} in ${killRounds} rounds`);
  console.log(`  wall time                                ${((Date.now() - started) / 1000).toFixed(1)} s`);

  for (const s of servers) await s.close();
  await sim.stop();
  await dropDb();
  rmSync(dir, { recursive: true, force: true });
  console.log(failures.length ? `soak FAILED: ${failures.length} check(s)` : 'soak passed');
  return failures.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
