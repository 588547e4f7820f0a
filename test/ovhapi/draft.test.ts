/**
 * OVH's draft model mapped onto dnsplane's, through the served API: a tenant's writes are staged,
 * visible to its own reads only, and its refresh turns them into ONE apply through core with the
 * minimal operations — a staged delete and create of one record set become one PUT, or nothing when
 * they cancel out —, the TTL of the latest write that gave one, the journal; a staged write no refresh
 * published expires (and is swept); staged ids keep naming the records they became.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { sweepExpiredDrafts } from '../../src/core/ovh-api/staging.js';
import * as store from '../../src/store/index.js';
import { callLines } from '../helpers/expect.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `/domain/zone/${ZONE}/refresh`;

let h: Harness;
let base: string;
const keys: Record<string, OvhKeyValues> = {};

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    env: { DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'), DNSPLANE_OVH_API_RATE: '1000', DNSPLANE_OVH_API_BURST: '1000' },
  });
  for (const name of ['alice', 'bob']) {
    const token = await h.tenant(name, [ZONE]);
    await h.zoneClient(token).records({ zones: [ZONE] });
    const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: name });
    keys[name] = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  }
  base = `${h.server.url}/ovh/1.0`;
});

afterAll(async () => {
  await h?.close();
});

const call = (who: string, method: string, path: string, body?: unknown) => ovhCall(base, keys[who], method, path, body === undefined ? {} : { body });
const ok = async (who: string, method: string, path: string, body?: unknown) => {
  const a = await call(who, method, path, body);
  expect(a.status, `${method} ${path}: ${a.text}`).toBeLessThan(300);
  return a.json as any;
};
const upstream = () => callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'));
const published = (sub: string) =>
  h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.subDomain === sub)
    .map((r) => `${r.target} ${r.ttl}`)
    .sort();

describe('the draft', () => {
  it("staged writes are the tenant's alone until its refresh; nothing goes to OVH before it", async () => {
    h.sim.clearCalls();
    const a = await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'app', target: '192.0.2.10', ttl: 300 });
    await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'app', target: '192.0.2.11', ttl: 300 });
    expect(await ok('alice', 'GET', `${REC}?subDomain=app`)).toHaveLength(2);
    expect(await ok('bob', 'GET', `${REC}?subDomain=app`)).toEqual([]);
    // Her staged records are hers alone: bob cannot even see them.
    expect((await call('bob', 'GET', `${REC}/${a.id}`)).status).toBe(404);
    expect(upstream()).toEqual([]);
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([`POST ${REC}`, `POST ${REC}`, `POST ${REFRESH}`]);
    expect(published('app')).toEqual(['192.0.2.10 300', '192.0.2.11 300']);
    // Now published and alice's: bob is refused at the write.
    const refused = await call('bob', 'POST', REC, { fieldType: 'A', subDomain: 'app', target: '192.0.2.12' });
    expect([refused.status, refused.json]).toEqual([
      403,
      { errorCode: 'NOT_GRANTED_CALL', httpCode: '403 Forbidden', message: 'This call has not been granted (app.example.test A is owned by tenant "alice")' },
    ]);
  });

  it('a staged delete and create of one set become one PUT; a delete and the same create again, nothing', async () => {
    const ids = (await ok('alice', 'GET', `${REC}?subDomain=app`)) as number[];
    const first = (await ok('alice', 'GET', `${REC}/${ids[0]}`)) as { target: string };
    h.sim.clearCalls();
    await ok('alice', 'DELETE', `${REC}/${ids[0]}`);
    const moved = await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'app', target: '192.0.2.20', ttl: 300 });
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([`PUT ${REC}/ID`, `POST ${REFRESH}`]);
    expect(published('app')).toEqual(['192.0.2.11 300', '192.0.2.20 300'].sort());
    expect(first.target).toBe('192.0.2.10');
    // The id the POST answered names the record the PUT reused.
    expect(await ok('alice', 'GET', `${REC}/${moved.id}`)).toMatchObject({ id: moved.id, target: '192.0.2.20' });

    h.sim.clearCalls();
    const now = (await ok('alice', 'GET', `${REC}?subDomain=app`)) as number[];
    const again = (await ok('alice', 'GET', `${REC}/${now[0]}`)) as { target: string };
    await ok('alice', 'DELETE', `${REC}/${now[0]}`);
    await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'app', target: again.target, ttl: 300 });
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([]);
    expect(await store.listDraft(h.server.ctx.pool, (await store.getTenantByName(h.server.ctx.pool, 'alice'))!.id, ZONE)).toEqual([]);
  });

  it("a TTL change of one record of a set is the set's TTL: one PUT per record", async () => {
    const ids = (await ok('alice', 'GET', `${REC}?subDomain=app`)) as number[];
    h.sim.clearCalls();
    await ok('alice', 'PUT', `${REC}/${ids[0]}`, { ttl: 600 });
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([`PUT ${REC}/ID`, `PUT ${REC}/ID`, `POST ${REFRESH}`]);
    expect(published('app')).toEqual(['192.0.2.11 600', '192.0.2.20 600']);
  });

  it("a record added without a TTL leaves the set's TTL as it is: one POST, no PUT", async () => {
    await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'keep', target: '192.0.2.30', ttl: 900 });
    await ok('alice', 'POST', REFRESH);
    h.sim.clearCalls();
    await ok('alice', 'POST', REC, { fieldType: 'A', subDomain: 'keep', target: '192.0.2.31' });
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([`POST ${REC}`, `POST ${REFRESH}`]);
    expect(published('keep')).toEqual(['192.0.2.30 900', '192.0.2.31 900']);
  });

  it("the refresh is one apply, journaled as the tenant's, naming the door and the application key", async () => {
    const ids = (await ok('alice', 'GET', `${REC}?subDomain=app`)) as number[];
    await ok('alice', 'POST', REC, { fieldType: 'TXT', subDomain: 'app', target: 'hello' });
    for (const id of ids) await ok('alice', 'DELETE', `${REC}/${id}`);
    h.sim.clearCalls();
    await ok('alice', 'POST', REFRESH);
    expect(upstream()).toEqual([`DELETE ${REC}/ID`, `DELETE ${REC}/ID`, `POST ${REC}`, `POST ${REFRESH}`]);
    const [entry] = await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 1 });
    expect(entry).toMatchObject({ state: 'done' });
    expect(entry!.tenantId).toBe((await store.getTenantByName(h.server.ctx.pool, 'alice'))!.id);
    // Not "an inline apply": which door and which key (the application key is public; no secret).
    expect((entry!.intent as { summary?: string }).summary).toBe(`OVH API refresh by application key ${keys['alice']!.applicationKey}`);
    expect(JSON.stringify(entry)).not.toContain(keys['alice']!.applicationSecret);
  });

  it('a staged write no refresh published expires: never read again, swept, never published', async () => {
    const staged = await ok('bob', 'POST', REC, { fieldType: 'TXT', subDomain: 'late', target: 'x' });
    await h.server.ctx.pool.query(`UPDATE ovh_drafts SET expires_at = now() - interval '1 second' WHERE record_id = $1`, [String(staged.id)]);
    expect(await ok('bob', 'GET', `${REC}?subDomain=late`)).toEqual([]);
    expect((await call('bob', 'GET', `${REC}/${staged.id}`)).status).toBe(404);
    h.sim.clearCalls();
    await ok('bob', 'POST', REFRESH);
    expect(upstream()).toEqual([]);
    expect(await sweepExpiredDrafts(h.server.ctx)).toEqual({ drafts: 1, ids: expect.any(Number) });
    expect((await h.server.ctx.pool.query('SELECT count(*)::int AS n FROM ovh_drafts')).rows[0].n).toBe(0);
  });
});
