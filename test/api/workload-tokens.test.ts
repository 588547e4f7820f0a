/**
 * Workload tokens (issue 45) through the API's router in memory (test/helpers/api-memory.ts): test
 * issuers over HTTPS on loopback (test/helpers/oidc-issuer.ts: discovery + JWKS, RS256 and ES256)
 * mint tokens with the claims of a Kubernetes projected ServiceAccount token; a tenant trusting the
 * issuer and subject is who they act as, every other token is Unauthenticated naming the rule it
 * failed — never a tenant's name.
 */
import { Code } from '@connectrpc/connect';
import { base64url, SignJWT, exportSPKI, importJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IssuerKeys } from '../../src/core/credentials/issuer-keys.js';
import { trustSubject, untrustSubject, type TrustAdmin } from '../../src/core/credentials/workload-trust.js';
import { TokenCache, createTenant, setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { inMemoryClient } from '../helpers/api-memory.js';
import { applyRoom, type ApplyRoom } from '../helpers/core-apply.js';
import { expectRejected } from '../helpers/expect.js';
import { captureLogger } from '../helpers/log-capture.js';
import { startIssuer, type TestIssuer } from '../helpers/oidc-issuer.js';

const ZONE = 'workload.test';
const SA = 'system:serviceaccount:external-dns:external-dns';
const SPIFFE = 'spiffe://example.org/ns/nsm-system/sa/registry';
let room: ApplyRoom;
let a: TestIssuer; // RS256, trusted by c1 for SA (discovery)
let b: TestIssuer; // ES256, trusted by c2 for SPIFFE (discovery, an issuer URL with a path)
let other: TestIssuer; // trusted by nobody
/** Added to the issuer keys' clock: moves past a cooldown, a refresh or the bound without waiting. */
let skew = 0;
const COOLDOWN_MS = 30_000;
const captured = captureLogger('info');
const metrics = new Metrics({ defaultMetrics: false, eventLoop: false });
let trustAdmin: TrustAdmin;

beforeAll(async () => {
  [a, b, other] = await Promise.all([startIssuer({ alg: 'RS256' }), startIssuer({ alg: 'ES256', path: '/id/EXAMPLE', sub: SPIFFE }), startIssuer()]);
  room = await applyRoom({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] }, tenants: ['c1', 'c2', 'c3'] });
  room.ctx.tokens = new TokenCache(() => true);
  room.ctx.metrics = metrics;
  room.ctx.issuerKeys = new IssuerKeys({
    cooldownMs: COOLDOWN_MS,
    refreshMs: 600_000,
    maxAgeMs: 3_600_000,
    clock: () => Date.now() + skew,
    log: captured.log,
    onFetch: (issuer, result) => metrics.jwksFetched(issuer, result),
  });
  trustAdmin = { pool: room.db.pool, actor: null, tokens: room.ctx.tokens };
  await trustSubject(trustAdmin, { tenant: 'c1', issuer: a.url, subject: SA, caPem: a.caPem });
  await trustSubject(trustAdmin, { tenant: 'c2', issuer: b.url, subject: SPIFFE, caPem: b.caPem });
});
afterAll(async () => {
  await room?.close();
  await Promise.all([a, b, other].map((i) => i?.close()));
});

const zone = (token: string) => inMemoryClient(room.ctx, ZoneService, token);
const whoIs = async (token: string) => (await zone(token).listZones({})).tenant;
/** Refused Unauthenticated naming `rule`, and never a tenant's name. */
async function refused(token: string, rule: RegExp): Promise<void> {
  const e = await expectRejected(zone(token).listZones({}), Code.Unauthenticated, rule);
  expect(e.rawMessage).toMatch(/^workload token refused: /);
  expect(e.rawMessage).not.toMatch(/\bc[123]\b/);
}
const jwksFetches = () => a.requests().filter((p) => p.endsWith('/jwks')).length;

describe('a trusted issuer and subject', () => {
  it('acts as its tenant: RS256 (discovery at the issuer) and ES256 (an issuer URL with a path)', async () => {
    expect(await whoIs(await a.mint())).toBe('c1');
    expect(await whoIs(await b.mint({ sub: SPIFFE }))).toBe('c2');
    expect(a.requests()).toEqual(['/.well-known/openid-configuration', '/openid/v1/jwks']);
    expect(b.requests()).toEqual(['/id/EXAMPLE/.well-known/openid-configuration', '/id/EXAMPLE/openid/v1/jwks']);
  });

  it('a verified token is kept until it expires: its next call verifies nothing', async () => {
    const token = await a.mint();
    expect(await whoIs(token)).toBe('c1');
    const before = (await metrics.registry.getSingleMetricAsString('dnsplane_workload_tokens_total')).match(/result="verified"} (\d+)/)?.[1];
    expect(await whoIs(token)).toBe('c1');
    const after = (await metrics.registry.getSingleMetricAsString('dnsplane_workload_tokens_total')).match(/result="verified"} (\d+)/)?.[1];
    expect(after).toBe(before);
  });
});

describe('refused, naming the rule', () => {
  it('expired, not yet valid, too long-lived', async () => {
    await refused(await a.mint({ iatOffset: -1200, lifetime: 600 }), /expired at .* \(leeway 60 s\)/);
    await refused(await a.mint({ nbfOffset: 300 }), /not valid before/);
    await refused(await a.mint({ lifetime: 7200 }), /a lifetime of 7200 s \(iat to exp\) is over the 3600 s allowed/);
    // Within the leeway: 30 s past exp still works (clock skew), an hour exactly is allowed.
    expect(await whoIs(await a.mint({ iatOffset: -630, lifetime: 600 }))).toBe('c1');
    expect(await whoIs(await a.mint({ lifetime: 3600 }))).toBe('c1');
  });

  it('another audience, or none', async () => {
    await refused(await a.mint({ aud: ['vault'] }), /audience \["vault"\] is not the one trusted for this subject \("dnsplane"\)/);
    await refused(await a.mint({ aud: 'dnsplane-other' }), /audience "dnsplane-other"/);
    await refused(await a.mint({ aud: [] }), /audience \[\]/);
  });

  it('an issuer nobody trusts: refused before anything is fetched from it', async () => {
    await refused(await other.mint(), /issuer "https:\/\/127\.0\.0\.1:\d+" is not trusted/);
    expect(other.requests()).toEqual([]);
  });

  it('a subject the issuer has that no tenant trusts', async () => {
    await refused(
      await a.mint({ sub: 'system:serviceaccount:kube-system:default' }),
      /subject "system:serviceaccount:kube-system:default" is not trusted for issuer/,
    );
  });

  it("alg none, and HS256 keyed with the issuer's public key", async () => {
    const claims = { iss: a.url, sub: SA, aud: ['dnsplane'], iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 600 };
    const none = `${base64url.encode(JSON.stringify({ alg: 'none' }))}.${base64url.encode(JSON.stringify(claims))}.`;
    await refused(none, /algorithm "none" is not accepted \(asymmetric only/);
    const pub = await importJWK(a.current().publicJwk, 'RS256');
    const pem = await exportSPKI(pub as Parameters<typeof exportSPKI>[0]);
    for (const secret of [new TextEncoder().encode(pem), new TextEncoder().encode(JSON.stringify(a.current().publicJwk))]) {
      const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: a.current().kid }).sign(secret);
      await refused(hs, /algorithm "HS256" is not accepted/);
    }
  });

  it('an unknown kid, and a key the issuer never published', async () => {
    await refused(await a.mint({ headerKid: 'made-up' }), /unknown key \(kid "made-up", RS256\)/);
    const stranger = await generateKeyPair('RS256');
    const forged = await new SignJWT({ aud: ['dnsplane'] })
      .setProtectedHeader({ alg: 'RS256', kid: a.current().kid })
      .setIssuer(a.url)
      .setSubject(SA)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(stranger.privateKey);
    await refused(forged, /the signature does not verify with the issuer's key/);
  });

  it('not a JWT at all, or without iss: refused as such', async () => {
    await refused('e30.e30.', /algorithm undefined is not accepted/);
    await refused(`${base64url.encode('{"alg":"RS256"}')}.${base64url.encode('{"sub":"x"}')}.c2ln`, /no iss claim/);
  });
});

describe('two tenants, two issuers', () => {
  it("a token of one never acts as the other: another issuer's subject, another issuer's key, a forged iss", async () => {
    // a's token for the subject c2 trusts at b.
    await refused(await a.mint({ sub: SPIFFE }), /subject "spiffe:.*" is not trusted for issuer/);
    // b's key id presented to a: not among a's keys.
    await refused(await a.mint({ headerKid: b.current().kid }), /unknown key/);
    // Signed by b's key, claiming to be a: checked with a's keys only.
    const token = await b.mint({ sub: SA, iss: a.url });
    await refused(token, /unknown key/);
    expect(await whoIs(await b.mint({ sub: SPIFFE }))).toBe('c2');
  });

  it('trust refuses an (issuer, subject) another tenant holds, and bad fields, naming them', async () => {
    await expect(trustSubject(trustAdmin, { tenant: 'c3', issuer: a.url, subject: SA })).rejects.toThrow(
      /^subject: "system:serviceaccount:external-dns:external-dns" of issuer https:\/\/127\.0\.0\.1:\d+ acts as exactly one tenant, and tenant "c1" trusts it$/,
    );
    await expect(trustSubject(trustAdmin, { tenant: 'c3', issuer: 'http://issuer.example', subject: SA })).rejects.toThrow(/^issuer: must be an https URL/);
    await expect(trustSubject(trustAdmin, { tenant: 'c3', issuer: a.url, subject: '' })).rejects.toThrow(/^subject: is required/);
    await expect(trustSubject(trustAdmin, { tenant: 'c3', issuer: a.url, subject: 'x', jwks: '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}' })).rejects.toThrow(
      /^jwks: no public signing key .*symmetric and private keys are never trusted/,
    );
    await expect(trustSubject(trustAdmin, { tenant: 'nobody', issuer: a.url, subject: 'x' })).rejects.toThrow(/tenant "nobody" does not exist/);
  });
});

describe("the issuer's keys", () => {
  it('rotated: a new kid is fetched and used at once (one JWKS request)', async () => {
    skew += COOLDOWN_MS;
    const before = jwksFetches();
    const kid = await a.rotate();
    expect(await whoIs(await a.mint({ kid }))).toBe('c1');
    expect(jwksFetches()).toBe(before + 1);
  });

  it('a flood of made-up kids costs the issuer one request per cooldown', async () => {
    skew += COOLDOWN_MS;
    const before = jwksFetches();
    for (let i = 0; i < 40; i++) await refused(await a.mint({ headerKid: `flood-${i}` }), /unknown key/);
    expect(jwksFetches()).toBe(before + 1);
    skew += COOLDOWN_MS;
    for (let i = 0; i < 10; i++) await refused(await a.mint({ headerKid: `flood-again-${i}` }), /unknown key/);
    expect(jwksFetches()).toBe(before + 2);
  });

  it('issuer down: cached keys go on working, a new kid is refused with the reason, logged and counted; past the bound, Unavailable', async () => {
    const cached = await a.mint();
    expect(await whoIs(cached)).toBe('c1');
    a.setDown(true);
    skew += 600_000; // past the refresh: fetched again in the background, which fails
    expect(await whoIs(await a.mint())).toBe('c1');
    const kid = await a.rotate();
    skew += COOLDOWN_MS;
    await refused(await a.mint({ kid }), /unknown key \(kid "[^"]+", RS256\): the issuer's keys could not be fetched again \(.* answered 503\)/);
    expect(
      captured.lines.some((l) => l.msg.includes("a trusted issuer's keys could not be fetched: its cached keys go on working") && l['issuer'] === a.url),
    ).toBe(true);
    expect(await metrics.registry.getSingleMetricAsString('dnsplane_jwks_fetches_total')).toContain(`issuer="${a.url}",result="failed"`);
    // Past DNSPLANE_JWKS_MAX_AGE without a successful fetch: no key of a's is used any more.
    skew += 3_600_000;
    await expectRejected(zone(await a.mint()).listZones({}), Code.Unavailable, /the keys of issuer "https:.*" could not be fetched .*; retry later/);
    // A token verified before is kept until its exp: the cache does not ask the keys.
    expect(await whoIs(cached)).toBe('c1');
    a.setDown(false);
    skew += COOLDOWN_MS;
    expect(await whoIs(await a.mint({ kid }))).toBe('c1');
  });
});

describe('a JWKS uploaded (an issuer dnsplane cannot reach)', () => {
  it('verifies with the file, never fetches; a kid it lacks says to upload the current one', async () => {
    const hidden = await startIssuer({ sub: 'system:serviceaccount:nsm-system:registry' });
    try {
      const { trust } = await trustSubject(trustAdmin, {
        tenant: 'c3',
        issuer: hidden.url,
        subject: 'system:serviceaccount:nsm-system:registry',
        jwks: JSON.stringify(hidden.jwks()),
      });
      expect(trust.keys).toBe('jwks-file (1 key(s))');
      expect(await whoIs(await hidden.mint())).toBe('c3');
      const kid = await hidden.rotate();
      await refused(await hidden.mint({ kid }), /unknown key .*the JWKS uploaded for this issuer lacks it/);
      expect(hidden.requests()).toEqual([]);
    } finally {
      await hidden.close();
    }
  });
});

describe('untrust and disable', () => {
  it('untrust stops a verified token at once; a disabled tenant is refused', async () => {
    const t = await createTenant(room.db.pool, { name: 'c4', zones: [ZONE] });
    expect(t.tenant.name).toBe('c4');
    const sub = 'system:serviceaccount:tenant4:external-dns';
    await trustSubject(trustAdmin, { tenant: 'c4', issuer: a.url, subject: sub });
    const token = await a.mint({ sub });
    expect(await whoIs(token)).toBe('c4');
    await untrustSubject(trustAdmin, { tenant: 'c4', issuer: a.url, subject: sub });
    await refused(token, /subject .* is not trusted/);
    await expect(untrustSubject(trustAdmin, { tenant: 'c4', issuer: a.url, subject: sub })).rejects.toThrow(/tenant "c4" does not trust subject/);
    await trustSubject(trustAdmin, { tenant: 'c4', issuer: a.url, subject: sub });
    await setTenantDisabled(room.db.pool, 'c4', true);
    await refused(await a.mint({ sub }), /the subject's tenant is disabled/);
  });
});
