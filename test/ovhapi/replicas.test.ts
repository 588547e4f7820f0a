/**
 * OVH keys on two replicas sharing one database, each with its key cache warm: a key rotated or
 * deleted through either replica's admin RPC, or its tenant disabled, is refused by the other within
 * the delivery of a notification (NOTIFY dnsplane_tenant, as tokens and TSIG keys); a tool's staged
 * writes are one draft whichever replica it reaches; and no secret or consumer key reaches a log line
 * (trace level), an answer's body or /metrics.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import type { TestDatabase } from '../helpers/db.js';
import { startReplicas, type Replicas } from '../helpers/server.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { serviceClient } from '../helpers/sim-server.js';
import { until } from '../helpers/until.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'replicas.test';
const ENV = { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'), DNSPLANE_ZONES: ZONE, DNSPLANE_DRIFT_INTERVAL: 'off' };

let sim: OvhSimulator;
let db: TestDatabase;
let replicas: Server[] = [];
let cluster: Replicas | undefined;
const logLines: string[] = [];
const bodies: string[] = [];
const secrets: string[] = [];
let root: string;

const base = (r: Server) => `${r.url}/ovh/1.0`;
async function call(r: Server, key: OvhKeyValues, method: string, path: string, body?: unknown) {
  const a = await ovhCall(base(r), key, method, path, body === undefined ? {} : { body });
  bodies.push(a.text);
  return a;
}

async function issue(tenant: string): Promise<OvhKeyValues> {
  const issued = (await serviceClient(AdminService, replicas[0]!, root).createOvhKey({ tenant })).issued!;
  secrets.push(issued.applicationSecret, issued.consumerKey);
  return { applicationKey: issued.key!.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
}

beforeAll(async () => {
  cluster = await startReplicas({
    zones: { [ZONE]: [] },
    env: ENV,
    logger: () => pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) }),
  });
  ({ sim, db, servers: replicas } = cluster);
  root = (await createTenant(db.pool, { name: 'root', zones: [], admin: true })).token;
  await createTenant(db.pool, { name: 'alice', zones: [ZONE] });
  await until('both replicas to listen', () => replicas.every((r) => r.ctx.ovhKeys!.trusted()));
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

describe('two replicas', () => {
  it('a key rotated on one replica is refused on the other within a notification; the new one works on both', async () => {
    const key = await issue('alice');
    for (const r of replicas) expect((await call(r, key, 'GET', '/domain/zone')).status).toBe(200);
    expect(replicas.every((r) => r.ctx.ovhKeys!.size === 1)).toBe(true);
    const rotated = (await serviceClient(AdminService, replicas[0]!, root).rotateOvhKey({ applicationKey: key.applicationKey })).issued!;
    secrets.push(rotated.applicationSecret, rotated.consumerKey);
    const fresh = { applicationKey: key.applicationKey, applicationSecret: rotated.applicationSecret, consumerKey: rotated.consumerKey };
    await until('the other replica to drop the old key', () => replicas[1]!.ctx.ovhKeys!.size === 0);
    for (const r of replicas) {
      expect((await call(r, key, 'GET', '/domain/zone')).json).toMatchObject({ errorCode: 'INVALID_CREDENTIAL' });
      expect((await call(r, fresh, 'GET', '/domain/zone')).status).toBe(200);
    }
    await serviceClient(AdminService, replicas[1]!, root).deleteOvhKey({ applicationKey: key.applicationKey });
    await until('the first replica to drop the deleted key', () => replicas[0]!.ctx.ovhKeys!.size === 0);
    for (const r of replicas) expect((await call(r, fresh, 'GET', '/domain/zone')).json).toMatchObject({ errorCode: 'INVALID_KEY' });
  });

  it('a tenant disabled is refused on both; its writes staged through one replica are published by a refresh through the other', async () => {
    const key = await issue('alice');
    for (const r of replicas) expect((await call(r, key, 'GET', '/domain/zone')).status).toBe(200);
    await call(replicas[0]!, key, 'GET', `/domain/zone/${ZONE}/record`); // the zone's first read from OVH
    sim.clearCalls();
    const created = await call(replicas[0]!, key, 'POST', `/domain/zone/${ZONE}/record`, { fieldType: 'A', subDomain: 'app', target: '192.0.2.5', ttl: 300 });
    expect(created.status).toBe(200);
    expect((await call(replicas[1]!, key, 'GET', `/domain/zone/${ZONE}/record?subDomain=app`)).json).toEqual([(created.json as { id: number }).id]);
    expect((await call(replicas[1]!, key, 'POST', `/domain/zone/${ZONE}/refresh`)).status).toBe(204);
    expect(callLines(sim)).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
    await setTenantDisabled(db.pool, 'alice', true);
    await until("both replicas to drop the disabled tenant's key", () => replicas.every((r) => r.ctx.ovhKeys!.size === 0));
    for (const r of replicas)
      expect((await call(r, key, 'GET', '/domain/zone')).json).toEqual({
        errorCode: 'INVALID_CREDENTIAL',
        httpCode: '403 Forbidden',
        message: 'This credential is not valid',
      });
    await setTenantDisabled(db.pool, 'alice', false);
  });

  it('no secret or consumer key in a log line, an answer or /metrics', async () => {
    const metrics = await (await fetch(`${replicas[0]!.url}/metrics`)).text();
    expect(metrics).toContain('dnsplane_ovh_api_requests_total{route="zones",status="200"}');
    const where = [...logLines, ...bodies, metrics].join('\n');
    expect(secrets.length).toBeGreaterThan(0);
    for (const s of secrets) expect(where.includes(s), 'a secret or consumer key leaked').toBe(false);
  });
});
