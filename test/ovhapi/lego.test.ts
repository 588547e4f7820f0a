/**
 * A whole ACME DNS-01 issuance through the OVH API dnsplane serves, offline: Debian's `lego --dns ovh`
 * with a tenant's OVH-style keys and OVH_ENDPOINT=http://127.0.0.1:<port>/ovh/1.0 (the four values a
 * tool changes), pebble validating against the simulator's authoritative DNS server (what OVH
 * published). The certificate is issued; upstream, dnsplane made exactly the calls lego would have made
 * to OVH for it — one POST and one refresh to present, one DELETE and one refresh to clean up — and the
 * zone ends as it was.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOvhKey, type IssuedOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { startPebble, type Pebble } from '../helpers/acme.js';
import { describeWithTools, run } from '../helpers/dns-tools.js';
import { callLines } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.test';

describeWithTools(['pebble', 'lego'], 'lego --dns ovh through the served OVH API', () => {
  let h: Harness;
  let pebble: Pebble;
  let issued: IssuedOvhKey;
  let work: string;

  beforeAll(async () => {
    h = await startHarness({
      zones: {
        [ZONE]: [
          { subDomain: '', fieldType: 'A', target: '192.0.2.10', ttl: 300 },
          { subDomain: 'www', fieldType: 'CNAME', target: 'example.test.', ttl: 300 },
        ],
      },
      env: { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64') },
    });
    const token = await h.tenant('certs', [ZONE]);
    await h.zoneClient(token).records({ zones: [ZONE] }); // the zone's first read from OVH: not lego's cost
    issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: 'certs' });
    pebble = await startPebble(`127.0.0.1:${h.sim.dnsPort}`);
    work = mkdtempSync(path.join(tmpdir(), 'dnsplane-lego-ovh-'));
  });

  afterAll(async () => {
    await pebble?.close();
    await h?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const published = () =>
    h.sim
      .publishedRecords(ZONE)
      .map((r) => `${r.id} ${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`)
      .sort();

  it('issues a certificate: one POST and one refresh, then one DELETE and one refresh upstream; the zone as before', async () => {
    const before = published();
    h.sim.clearCalls();
    const dir = path.join(work, 'lego');
    const out = await run(
      'lego',
      [
        '--server',
        pebble.directory,
        '--accept-tos',
        '--email',
        'acme@example.test',
        '--path',
        dir,
        '--dns',
        'ovh',
        '--dns.disable-cp',
        '--dns.resolvers',
        `127.0.0.1:${h.sim.dnsPort}`,
        '-d',
        ZONE,
        'run',
      ],
      {
        env: {
          LEGO_CA_CERTIFICATES: pebble.caFile,
          OVH_ENDPOINT: `${h.server.url}/ovh/1.0`,
          OVH_APPLICATION_KEY: issued.key.applicationKey,
          OVH_APPLICATION_SECRET: issued.applicationSecret,
          OVH_CONSUMER_KEY: issued.consumerKey,
          OVH_POLLING_INTERVAL: '1',
          OVH_PROPAGATION_TIMEOUT: '60',
          OVH_TTL: '60',
          HOME: work,
        },
      },
    );
    expect(out.code, `${out.stdout}\n${out.stderr}\n${pebble.output()}`).toBe(0);
    const cert = new X509Certificate(readFileSync(path.join(dir, 'certificates', `${ZONE}.crt`), 'utf8'));
    expect(cert.subjectAltName).toBe(`DNS:${ZONE}`);
    const calls = callLines(h.sim).map((c) => c.replace(/\/record\/\d+$/, '/record/ID'));
    expect(calls).toEqual([
      `POST /domain/zone/${ZONE}/record`,
      `POST /domain/zone/${ZONE}/refresh`,
      `DELETE /domain/zone/${ZONE}/record/ID`,
      `POST /domain/zone/${ZONE}/refresh`,
    ]);
    // What was published, then taken away: the challenge TXT, by the id lego got from its POST.
    const posted = h.sim.calls().find((c) => c.method === 'POST' && c.path.endsWith('/record'))!;
    expect(posted.body).toMatchObject({ fieldType: 'TXT', subDomain: '_acme-challenge', ttl: 60 });
    expect(published()).toEqual(before);
    // Nothing left staged; the key was used.
    expect((await h.server.ctx.pool.query('SELECT count(*)::int AS n FROM ovh_drafts')).rows[0].n).toBe(0);
  });
});
