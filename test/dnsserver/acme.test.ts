/**
 * Whole ACME DNS-01 issuances, offline: pebble (the ACME test server) validates against the simulator's
 * authoritative DNS server, which serves what OVH published; lego (`--dns rfc2136`) and certbot
 * (`--dns-rfc2136`) present their challenges to dnsplane with a tenant's ACME-only TSIG key, and find
 * the zone by asking dnsplane for SOA records. A certificate for example.test and *.example.test is
 * issued, and afterwards the challenge records are gone and the zone is exactly as it was.
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { startPebble, type Pebble } from '../helpers/acme.js';
import { memoryKeyring } from '../helpers/dns-keys.js';
import { describeWithTools, run } from '../helpers/dns-tools.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines } from '../helpers/expect.js';

const ZONE = 'example.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `POST /domain/zone/${ZONE}/refresh`;
const keyring = memoryKeyring();

describeWithTools(['pebble', 'lego', 'certbot'], 'ACME DNS-01 through dnsplane', () => {
  let h: Harness;
  let pebble: Pebble;
  let doorPort: number;
  let legoKey: TsigKey;
  let certbotKey: TsigKey;
  let token: string;
  let work: string;

  beforeAll(async () => {
    h = await startHarness({
      zones: {
        [ZONE]: [
          { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' },
          { subDomain: '', fieldType: 'A', target: '192.0.2.10', ttl: 300 },
          { subDomain: 'www', fieldType: 'CNAME', target: 'example.test.', ttl: 300 },
        ],
      },
      env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0' },
      dnsKeyring: keyring,
    });
    doorPort = h.server.dns!.port;
    const certs = await createTenant(h.server.ctx.pool, { name: 'certs', zones: [ZONE] });
    token = certs.token;
    legoKey = keyring.add(certs.tenant, { algorithm: 'hmac-sha256', acmeOnly: true, name: 'lego.certs.dnsplane' });
    certbotKey = keyring.add(certs.tenant, { algorithm: 'hmac-md5', acmeOnly: true, name: 'certbot.certs.dnsplane' });
    pebble = await startPebble(`127.0.0.1:${h.sim.dnsPort}`);
    work = mkdtempSync(path.join(tmpdir(), 'dnsplane-acme-'));
  });

  afterAll(async () => {
    await pebble?.close();
    await h?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The zone as OVH holds it, draft and published, and as Records serves it. */
  async function zoneState() {
    const rows = (list: ReturnType<Harness['sim']['publishedRecords']>) => list.map((r) => `${r.id} ${r.subDomain} ${r.fieldType} ${r.target} ${r.ttl}`).sort();
    const records = (await h.zoneClient(token).records({ zones: [ZONE], includeForeign: true })).zones[0]!.endpoints.map(
      (e) => `${e.dnsName} ${e.recordType} ${e.targets.join(',')} ${e.ttl}`,
    ).sort();
    return { draft: rows(h.sim.draftRecords(ZONE)), published: rows(h.sim.publishedRecords(ZONE)), records };
  }

  const calls = () => callLines(h.sim).map((c) => c.replace(/\/record\/\d+$/, '/record/ID'));

  function expectCertificate(pem: string): void {
    const cert = new X509Certificate(pem);
    expect(cert.subjectAltName?.split(', ').sort()).toEqual(['DNS:*.example.test', 'DNS:example.test']);
  }

  it('lego --dns rfc2136 with an ACME-only key: issued; the challenge records gone; the zone as before', async () => {
    const before = await zoneState();
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
        'rfc2136',
        '--dns.disable-cp',
        '--dns.resolvers',
        `127.0.0.1:${doorPort}`,
        '-d',
        ZONE,
        '-d',
        `*.${ZONE}`,
        'run',
      ],
      {
        env: {
          LEGO_CA_CERTIFICATES: pebble.caFile,
          RFC2136_NAMESERVER: `127.0.0.1:${doorPort}`,
          RFC2136_TSIG_KEY: legoKey.name,
          RFC2136_TSIG_SECRET: legoKey.secret.toString('base64'),
          RFC2136_TSIG_ALGORITHM: 'hmac-sha256.',
          RFC2136_SEQUENCE_INTERVAL: '1',
          RFC2136_POLLING_INTERVAL: '1',
          RFC2136_TTL: '60',
          HOME: work,
        },
      },
    );
    expect(out.code, `${out.stdout}\n${out.stderr}\n${pebble.output()}`).toBe(0);
    expectCertificate(readFileSync(path.join(dir, 'certificates', `${ZONE}.crt`), 'utf8'));
    // Each challenge, in turn (lego solves one name after the other): one POST and one refresh to
    // present (its "delete the RRset, then add" deletes nothing of anyone else), one DELETE and one refresh to clean up.
    const present = [`POST ${REC}`, REFRESH];
    const cleanup = [`DELETE ${REC}/ID`, REFRESH];
    expect(calls()).toEqual([...present, ...cleanup, ...present, ...cleanup]);
    expect(await zoneState()).toEqual(before);
    expect(keyring.used).toContain(legoKey.name);
  });

  it('certbot --dns-rfc2136 with an ACME-only key (hmac-md5, its default): issued; the zone as before', async () => {
    const before = await zoneState();
    h.sim.clearCalls();
    const dir = path.join(work, 'certbot');
    const ini = path.join(work, 'rfc2136.ini');
    writeFileSync(
      ini,
      [
        'dns_rfc2136_server = 127.0.0.1',
        `dns_rfc2136_port = ${doorPort}`,
        `dns_rfc2136_name = ${certbotKey.name}`,
        `dns_rfc2136_secret = ${certbotKey.secret.toString('base64')}`,
        'dns_rfc2136_algorithm = HMAC-MD5',
        '',
      ].join('\n'),
    );
    chmodSync(ini, 0o600);
    const out = await run(
      'certbot',
      [
        'certonly',
        '--non-interactive',
        '--agree-tos',
        '--register-unsafely-without-email',
        '--server',
        pebble.directory,
        '--no-verify-ssl',
        '--config-dir',
        path.join(dir, 'config'),
        '--work-dir',
        path.join(dir, 'work'),
        '--logs-dir',
        path.join(dir, 'logs'),
        '--authenticator',
        'dns-rfc2136',
        '--dns-rfc2136-credentials',
        ini,
        '--dns-rfc2136-propagation-seconds',
        '0',
        '--cert-name',
        ZONE,
        '-d',
        ZONE,
        '-d',
        `*.${ZONE}`,
      ],
      { env: { HOME: work } },
    );
    expect(out.code, `${out.stdout}\n${out.stderr}\n${pebble.output()}`).toBe(0);
    expectCertificate(readFileSync(path.join(dir, 'config', 'live', ZONE, 'cert.pem'), 'utf8'));
    // Both values presented under one name (one UPDATE each), then both cleaned up.
    expect(calls()).toEqual([`POST ${REC}`, REFRESH, `POST ${REC}`, REFRESH, `DELETE ${REC}/ID`, REFRESH, `DELETE ${REC}/ID`, REFRESH]);
    expect(await zoneState()).toEqual(before);
    expect(keyring.used).toContain(certbotKey.name);
  });
});
