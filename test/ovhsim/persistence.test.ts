/**
 * stateFile persistence across restarts, and the `ovh-sim` command's runner.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { runSimulator } from '../../src/ovhsim/cli.js';
import { clientFor, trust } from '../helpers/sim-clients.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ovhsim-test-'));
const started: OvhSimulator[] = [];

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
  fs.rmSync(dir, { recursive: true, force: true });
});

async function start(opts: Parameters<typeof OvhSimulator.start>[0]): Promise<OvhSimulator> {
  const sim = await OvhSimulator.start(opts);
  started.push(sim);
  trust(sim);
  return sim;
}

describe('stateFile', () => {
  it('keeps zones, draft, published records, serials, ids and generated credentials across a restart', async () => {
    const stateFile = path.join(dir, 'state', 'sim.json');
    const first = await start({ stateFile, zones: { 'persist.test': [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }] } });
    expect(fs.existsSync(stateFile)).toBe(true);
    const c1 = clientFor(first);
    const published = (await c1.requestPromised('POST', '/domain/zone/persist.test/record', { fieldType: 'TXT', subDomain: 'p', target: 'kept' })) as {
      id: number;
    };
    await c1.requestPromised('POST', '/domain/zone/persist.test/refresh');
    const draftOnly = (await c1.requestPromised('POST', '/domain/zone/persist.test/record', { fieldType: 'A', subDomain: 'd', target: '192.0.2.2' })) as {
      id: number;
    };
    const serial = first.soaSerial('persist.test');
    const draft = first.draftRecords('persist.test');
    const pub = first.publishedRecords('persist.test');
    const credentials = first.credentials;
    await first.stop();
    // Written atomically: no temporary file left behind.
    expect(fs.readdirSync(path.dirname(stateFile))).toEqual(['sim.json']);

    const second = await start({ stateFile, zones: { 'persist.test': [], 'added.test': [] } });
    expect(second.credentials).toEqual(credentials);
    expect(second.zones()).toEqual(['added.test', 'persist.test']);
    expect(second.draftRecords('persist.test')).toEqual(draft);
    expect(second.publishedRecords('persist.test')).toEqual(pub);
    expect(second.soaSerial('persist.test')).toBe(serial);
    expect(second.isDeployed('persist.test')).toBe(false);
    const c2 = clientFor(second);
    expect(await c2.requestPromised('GET', `/domain/zone/persist.test/record/${published.id}`)).toMatchObject({ target: '"kept"' });
    const next = (await c2.requestPromised('POST', '/domain/zone/persist.test/record', { fieldType: 'A', subDomain: 'n', target: '192.0.2.3' })) as {
      id: number;
    };
    expect(next.id).toBeGreaterThan(draftOnly.id);

    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { zones: Record<string, { draft: { id: number }[] }> };
    expect(saved.zones['persist.test']?.draft.map((r) => r.id)).toContain(next.id);
  });

  it('writes direct edits too', async () => {
    const stateFile = path.join(dir, 'direct.json');
    const sim = await start({ stateFile, credentials: { applicationKey: 'ak', applicationSecret: 'as', consumerKey: 'ck' } });
    sim.addZone('direct.test', [{ subDomain: 'x', fieldType: 'A', target: '192.0.2.4' }]);
    const saved = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { zones: Record<string, unknown>; credentials?: unknown };
    expect(Object.keys(saved.zones)).toEqual(['direct.test']);
    expect(saved.credentials).toBeUndefined(); // given credentials are not written
  });
});

describe('runSimulator (dnsplane ovh-sim)', () => {
  it('writes the CA file and prints the URL, exports and a dig hint', async () => {
    const caFile = path.join(dir, 'ca', 'sim-ca.pem');
    const lines: string[] = [];
    const sim = await runSimulator({ caFile, zones: { 'example.test': [] } }, (l) => lines.push(l));
    started.push(sim);
    const out = lines.join('\n');
    expect(fs.readFileSync(caFile, 'utf8')).toBe(sim.caPem);
    expect(sim.caPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(out).toContain(sim.apiUrl);
    expect(out).toContain(caFile);
    expect(out).toContain(`export OVH_ENDPOINT=${sim.apiUrl}`);
    expect(out).toContain(`export OVH_APPLICATION_KEY=${sim.credentials.applicationKey}`);
    expect(out).toContain(`export OVH_APPLICATION_SECRET=${sim.credentials.applicationSecret}`);
    expect(out).toContain(`export OVH_CONSUMER_KEY=${sim.credentials.consumerKey}`);
    expect(out).toContain(`export NODE_EXTRA_CA_CERTS=${caFile}`);
    expect(out).toContain(`export OVH_CA_FILE=${caFile}`);
    expect(out).toContain(`dig @127.0.0.1 -p ${sim.dnsPort} example.test A`);
    // dnsplane's prober asks the zone's two name servers where they listen.
    expect(out).toContain(`export DNSPLANE_AUTHORITATIVE_SERVERS=127.0.0.1:${sim.dnsServers[0]!.port},127.0.0.1:${sim.dnsServers[1]!.port}`);
  });
});
