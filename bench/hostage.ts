/**
 * bench/hostage — "no zone held hostage" (issue 10 item 4): while one external-dns cluster creates
 * HOSTAGE_N records (default 5,000) in one webhook request, another tenant applies one record to the
 * same zone over Connect. Prints how long that one-record apply took, with batches
 * (DNSPLANE_APPLY_BATCH, default 100) and, for comparison, without (HOSTAGE_COMPARE=1 runs the same with
 * DNSPLANE_APPLY_BATCH=0: expect ABORTED after DNSPLANE_LOCK_TIMEOUT). Not part of `npm test`.
 *
 *   npx tsx bench/hostage.ts                       # 5,000 records at DNSPLANE_OVH_RATE=20 (the default)
 *   HOSTAGE_N=1000 HOSTAGE_COMPARE=1 npx tsx bench/hostage.ts
 *
 * Uses DATABASE_URL when set (a fresh database on that server), otherwise an embedded Postgres.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { ApplyStatus, EndpointSchema, Policy } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import { startServer } from '../src/server/server.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabaseOrEmbedded, writeSimulatorCa } from './lib.js';

const N = Number(process.env.HOSTAGE_N ?? 5000);
const RATE = process.env.HOSTAGE_RATE ?? '20';
const ZONE = 'hostage.test';

async function run(batch: string, dbUrl: string, dir: string): Promise<string> {
  const sim = await OvhSimulator.start({ zones: { [ZONE]: [] } });
  const caFile = writeSimulatorCa(sim, dir, `ca-${batch}.pem`);
  const server = await startServer(
    loadConfig({
      DATABASE_URL: dbUrl,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: '127.0.0.1:0',
      DNSPLANE_ZONES: ZONE,
      ...simulatorEnv(sim, caFile),
      DNSPLANE_OVH_RATE: RATE,
      DNSPLANE_APPLY_BATCH: batch,
      DNSPLANE_DRIFT_INTERVAL: '0',
      DNSPLANE_SHUTDOWN_TIMEOUT: '5s',
    }),
    pino({ level: 'silent' }),
  );
  const suffix = randomBytes(3).toString('hex');
  const a = await createTenant(server.ctx.pool, { name: `bulk-${suffix}`, zones: [ZONE] });
  const b = await createTenant(server.ctx.pool, { name: `small-${suffix}`, zones: [ZONE] });
  const client = zoneClientFor(server, b.token);
  await client.records({ zones: [ZONE] }); // synced

  // The bulk request, as external-dns sends it (one POST /records); answered 503 at the webhook's
  // deadline while the work goes on.
  const create_ = Array.from({ length: N }, (_, i) => ({
    dnsName: `bulk${i}.${ZONE}`,
    recordType: 'A',
    targets: [`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`],
    recordTTL: 300,
  }));
  const bulkStarted = Date.now();
  const bulk = fetch(`${server.webhookUrl}/records`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${a.tenant.name}:${a.token}`).toString('base64')}`,
      'content-type': 'application/external.dns.webhook+json;version=1',
    },
    body: JSON.stringify({ Create: create_, UpdateOld: [], UpdateNew: [], Delete: [] }),
  }).then((r) => r.status);
  // Let the bulk apply get going (its first batch under way).
  while (!sim.calls().some((c) => c.method === 'POST' && c.path.endsWith('/record'))) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 1000));
  const started = Date.now();
  let outcome: string;
  try {
    const res = await client.apply({
      source: {
        case: 'plan',
        value: {
          policy: Policy.UPSERT_ONLY,
          input: {
            case: 'desired',
            value: { zones: [], endpoints: [create(EndpointSchema, { dnsName: `small.${ZONE}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 })] },
          },
        },
      },
    });
    outcome = ApplyStatus[res.zones[0]!.status];
  } catch (e) {
    outcome = `${Code[ConnectError.from(e).code].toUpperCase()} (${ConnectError.from(e).rawMessage.slice(0, 70)})`;
  }
  const smallSeconds = (Date.now() - started) / 1000;
  const bulkPosts = sim.calls().filter((c) => c.method === 'POST' && c.path.endsWith('/record')).length;
  const line = `DNSPLANE_APPLY_BATCH=${batch.padEnd(4)} one-record apply: ${outcome.padEnd(10)} in ${smallSeconds.toFixed(1).padStart(6)} s   (bulk: webhook answered ${await bulk}, ${bulkPosts} creations sent after ${((Date.now() - bulkStarted) / 1000).toFixed(0)} s)`;
  await server.close();
  await sim.stop();
  return line;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-hostage-'));
  const { url: dbUrl, drop } = await benchDatabaseOrEmbedded('dnsplane_hostage', path.join(dir, 'data'));
  console.log(`hostage: ${N} creations in one webhook request, then another tenant's 1-record apply to the same zone; DNSPLANE_OVH_RATE=${RATE}`);
  console.log(await run('100', dbUrl, dir));
  if (process.env.HOSTAGE_COMPARE === '1') console.log(await run('0', dbUrl, dir));
  await drop();
  rmSync(dir, { recursive: true, force: true });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
