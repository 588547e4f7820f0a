/**
 * A credential is hashed once per request: the webhook's Basic password (for the token cache and the
 * failed-login limiter alike) and the served OVH API's consumer key (for the keyring's cache, its
 * table and the limiter), as the API's gate does with a bearer token. node:crypto's sha-256 entry
 * points are wrapped to count what they are given; nothing of dnsplane's own is replaced.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { LoginLimiter } from '../../src/core/tenants/login-limiter.js';
import { startCentralWebhook, type WebhookListener } from '../../src/webhook/index.js';
import { captureLogger } from '../helpers/log-capture.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { startHarness, type Harness } from '../helpers/server.js';

/** What was given to a sha-256 (crypto.hash, or a createHash('sha256')'s update), as text. */
const hashed = vi.hoisted(() => [] as string[]);

vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  const text = (data: unknown) => (typeof data === 'string' ? data : Buffer.isBuffer(data) ? data.toString('utf8') : '');
  return {
    ...real,
    hash: (algorithm: string, data: string, ...rest: unknown[]) => {
      if (algorithm === 'sha256') hashed.push(text(data));
      return (real.hash as (...a: unknown[]) => unknown)(algorithm, data, ...rest);
    },
    createHash: (algorithm: string, ...rest: unknown[]) => {
      const h = (real.createHash as (...a: unknown[]) => ReturnType<typeof real.createHash>)(algorithm, ...rest);
      if (algorithm !== 'sha256') return h;
      const update = h.update.bind(h) as (...a: unknown[]) => unknown;
      (h as { update: unknown }).update = (data: unknown, ...more: unknown[]) => {
        hashed.push(text(data));
        update(data, ...more);
        return h;
      };
      return h;
    },
  };
});

const ZONE = 'hashed.test';
let h: Harness;
let webhook: WebhookListener;
let token: string;
let key: OvhKeyValues;

/** How many of the hashes counted were of one of these texts (or of a text holding one). */
const timesHashed = (...secrets: string[]) => hashed.filter((d) => secrets.some((s) => d.includes(s))).length;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64') } });
  token = await h.tenant('t', [ZONE]);
  const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: 't' });
  key = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  const limiter = new LoginLimiter({ log: () => {} });
  webhook = await startCentralWebhook(h.server.ctx, { listen: { host: '127.0.0.1', port: 0 }, log: captureLogger().log, loginLimiter: limiter });
});

afterAll(async () => {
  await webhook?.close();
  await h?.close();
});

beforeEach(() => {
  hashed.length = 0;
});

it("the webhook hashes a poll's Basic password once (token cache and login limiter), cached or not", async () => {
  const authorization = `Basic ${Buffer.from(`t:${token}`).toString('base64')}`;
  for (let i = 0; i < 2; i++) {
    hashed.length = 0;
    const res = await fetch(`${webhook.url}/`, { headers: { authorization, accept: 'application/external.dns.webhook+json;version=1' } });
    expect(res.status).toBe(200);
    expect(timesHashed(token, authorization)).toBe(1);
  }
});

it("the served OVH API hashes a call's consumer key once (keyring and login limiter), cached or not", async () => {
  for (let i = 0; i < 2; i++) {
    hashed.length = 0;
    expect((await ovhCall(`${h.server.url}/ovh/1.0`, key, 'GET', '/domain/zone')).status).toBe(200);
    expect(hashed.filter((d) => d === key.consumerKey)).toHaveLength(1);
  }
});
