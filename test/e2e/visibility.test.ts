/**
 * Visibility through the server (server/server.ts, core/probe/): in demo mode the prober learns the zone's
 * name servers from its apex NS records in the cache (no OVH call) and asks them on their ports; an
 * apply is visible once both answer it, waited for through the server's listener; no probe makes an
 * OVH call; /metrics has the times per server. A publish that records no probe (issue 31.7: an older
 * replica's, or one whose probe could not be written — here the real apply path with the probes table
 * refusing its insert, which publish.ts logs and survives) still supersedes the earlier probes of the
 * sets it changed (migrations/0021's trigger), never leaving them to a false not_visible.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { apply } from '../../src/core/apply/index.js';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import { visibilityOf, waitVisible } from '../../src/core/visibility/visibility.js';
import { ensureSynced } from '../../src/core/zones/zones.js';
import { DEMO_ZONE } from '../../src/demo/demo.js';
import { startServer, type Server } from '../../src/server/server.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { simCalls } from '../helpers/ovh-api.js';
import { until } from '../helpers/until.js';

let db: TestDatabase;
let dataDir: string;
let server: Server;
let tenant: Tenant;

beforeAll(async () => {
  db = await testDatabase();
  dataDir = mkdtempSync(path.join(tmpdir(), 'dnsplane-visibility-'));
  const config = loadConfig({
    DATABASE_URL: db.url,
    DNSPLANE_DEMO: 'true',
    DNSPLANE_DATA_DIR: dataDir,
    DNSPLANE_LISTEN: '127.0.0.1:0',
    DNSPLANE_WEBHOOK_LISTEN: 'off',
    DNSPLANE_DNS_LISTEN: 'off',
    DNSPLANE_DRIFT_INTERVAL: 'off',
    DNSPLANE_SIM_PROPAGATION: '0',
    DNSPLANE_PROBE_BACKOFF: '50ms..200ms',
  });
  server = await startServer(config, pino({ level: 'silent' }));
  tenant = (await createTenant(db.pool, { name: 'vis', zones: [DEMO_ZONE] })).tenant;
  await ensureSynced(server.ctx, DEMO_ZONE);
});

afterAll(async () => {
  await server?.close();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Creates the A set `name` with `target`, or updates it from `update` when given. */
async function put(name: string, target: string, update?: string): Promise<string> {
  const e = (t: string) => ({ dnsName: `${name}.${DEMO_ZONE}`, recordType: 'A', targets: [t], ttl: 300 });
  const changes = update
    ? { create: [], updateOld: [e(update)], updateNew: [e(target)], delete: [] }
    : { create: [e(target)], updateOld: [], updateNew: [], delete: [] };
  const result = await apply(server.ctx, tenant, { input: { kind: 'changes', policy: 'sync', changes } });
  expect(result.zones[0]!.status).toBe('applied');
  return result.zones[0]!.journalId!;
}

it('an apply is visible once both name servers answer it; the name servers cost no OVH call', async () => {
  const sim = server.simulator!;
  sim.clearCalls();
  sim.propagation.hold('ns1.sim.test');
  const id = await put('www', '192.0.2.1');
  const half = await until('dns1 to answer', async () => {
    const v = await visibilityOf(server.ctx, id);
    return v?.servers.find((s) => s.server === 'dns1.sim.test')?.firstAnsweredAt && v;
  });
  expect(half.state).toBe('published');
  expect(half.servers.find((s) => s.server === 'ns1.sim.test')).toMatchObject({ behind: [`www.${DEMO_ZONE} A`] });
  sim.propagation.release('ns1.sim.test');
  const [v] = await waitVisible(server.ctx, [id], { timeoutMs: 120_000 });
  expect(v!.state).toBe('visible');
  expect(v!.servers.map((s) => s.server).sort()).toEqual(['dns1.sim.test', 'ns1.sim.test']);

  const second = await put('api', '192.0.2.2');
  expect((await waitVisible(server.ctx, [second], { timeoutMs: 120_000 }))[0]!.state).toBe('visible');
  const calls = simCalls(sim);
  expect(calls.filter((c) => !c.includes('/record'))).toEqual([`POST /domain/zone/${DEMO_ZONE}/refresh 204`, `POST /domain/zone/${DEMO_ZONE}/refresh 204`]);

  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  expect(metrics).toContain(`dnsplane_visibility_seconds_count{zone="${DEMO_ZONE}",server="ns1.sim.test"} 2`);
  expect(metrics).toContain(`dnsplane_visibility_final_total{zone="${DEMO_ZONE}",state="visible"} 2`);
});

it('an earlier probe of the sets a probe-less publish changed ends superseded by it; other names end visible', async () => {
  const sim = server.simulator!;
  const pool = server.ctx.pool;
  sim.propagation.hold();
  const kept = await put('keep', '192.0.2.9');
  const first = await put('www2', '192.0.2.1');
  await pool.query(`CREATE FUNCTION test_no_probe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no probe for this publish (test)'; END $$`);
  await pool.query(`CREATE TRIGGER test_no_probe BEFORE INSERT ON probes FOR EACH ROW EXECUTE FUNCTION test_no_probe()`);
  let later: string;
  try {
    later = await put('www2', '192.0.2.2', '192.0.2.1');
  } finally {
    await pool.query(`DROP TRIGGER test_no_probe ON probes; DROP FUNCTION test_no_probe()`);
  }
  const row = (await pool.query<{ published_at: Date | null; state: string }>(`SELECT published_at, state FROM journal WHERE id = $1`, [later])).rows[0]!;
  expect(row).toEqual({ published_at: null, state: 'done' }); // applied, no probe recorded
  sim.propagation.release();

  const [firstSeen, keptSeen] = await waitVisible(server.ctx, [first, kept], { timeoutMs: 120_000 });
  expect(firstSeen).toMatchObject({ state: 'superseded', supersededBy: later });
  expect(firstSeen!.reason).toBe(`journal ${later} changed www2.${DEMO_ZONE} A again before this apply was answered`);
  expect(keptSeen!.state).toBe('visible');
});
