/**
 * A publish that records no probe still supersedes the probes it makes stale (issue 31.7): an apply
 * whose probe cannot be written — as an older replica's, whose code records none — changes a set an
 * earlier apply's probe still waits for; the servers then answer the later data, and the earlier apply
 * ends `superseded` by it (migrations/0021's deferred trigger on the journal), never a false
 * `not_visible` at DNSPLANE_VISIBLE_TIMEOUT. A probe of other names is left to end `visible`.
 * (The publisher without a probe is the real apply path with the probes table refusing its insert:
 * publish.ts logs it and keeps the apply, as for any probe that cannot be recorded.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { apply } from '../../src/core/apply/index.js';
import { createTenant, type Tenant } from '../../src/core/tenants.js';
import { waitVisible } from '../../src/core/visibility.js';
import { ensureSynced } from '../../src/core/zones.js';
import { DEMO_ZONE } from '../../src/demo.js';
import { startServer, type Server } from '../../src/server.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
let dataDir: string;
let server: Server;
let tenant: Tenant;

beforeAll(async () => {
  db = await testDatabase();
  dataDir = mkdtempSync(path.join(tmpdir(), 'dnsplane-no-probe-'));
  const config = loadConfig({ DATABASE_URL: db.url, DNSPLANE_DEMO: 'true', DNSPLANE_DATA_DIR: dataDir, DNSPLANE_LISTEN: '127.0.0.1:0', DNSPLANE_WEBHOOK_LISTEN: 'off', DNSPLANE_DNS_LISTEN: 'off', DNSPLANE_DRIFT_INTERVAL: 'off', DNSPLANE_SIM_PROPAGATION: '0', DNSPLANE_PROBE_BACKOFF: '50ms..200ms', DNSPLANE_VISIBLE_TIMEOUT: '40s' });
  server = await startServer(config, pino({ level: 'silent' }));
  tenant = (await createTenant(db.pool, { name: 'vis', zones: [DEMO_ZONE] })).tenant;
  await ensureSynced(server.ctx, DEMO_ZONE);
});

afterAll(async () => {
  await server?.close();
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function put(name: string, target: string, update?: string): Promise<string> {
  const e = (t: string) => ({ dnsName: `${name}.${DEMO_ZONE}`, recordType: 'A', targets: [t], ttl: 300 });
  const changes = update ? { create: [], updateOld: [e(update)], updateNew: [e(target)], delete: [] } : { create: [e(target)], updateOld: [], updateNew: [], delete: [] };
  const result = await apply(server.ctx, tenant, { input: { kind: 'changes', policy: 'sync', changes } });
  expect(result.zones[0]!.status).toBe('applied');
  return result.zones[0]!.journalId!;
}

it('an earlier probe of the sets a probe-less publish changed ends superseded by it; other names end visible', async () => {
  const sim = server.simulator!;
  const pool = server.ctx.pool;
  sim.propagation.hold();
  const kept = await put('keep', '192.0.2.9');
  const first = await put('www', '192.0.2.1');
  await pool.query(`CREATE FUNCTION test_no_probe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no probe for this publish (test)'; END $$`);
  await pool.query(`CREATE TRIGGER test_no_probe BEFORE INSERT ON probes FOR EACH ROW EXECUTE FUNCTION test_no_probe()`);
  let later: string;
  try {
    later = await put('www', '192.0.2.2', '192.0.2.1');
  } finally {
    await pool.query(`DROP TRIGGER test_no_probe ON probes; DROP FUNCTION test_no_probe()`);
  }
  const row = (await pool.query<{ published_at: Date | null; state: string }>(`SELECT published_at, state FROM journal WHERE id = $1`, [later])).rows[0]!;
  expect(row).toEqual({ published_at: null, state: 'done' }); // applied, no probe recorded
  sim.propagation.release();

  const [firstSeen, keptSeen] = await waitVisible(server.ctx, [first, kept], { timeoutMs: 120_000 });
  expect(firstSeen).toMatchObject({ state: 'superseded', supersededBy: later });
  expect(firstSeen!.reason).toBe(`journal ${later} changed www.${DEMO_ZONE} A again before this apply was answered`);
  expect(keptSeen!.state).toBe('visible');
});
