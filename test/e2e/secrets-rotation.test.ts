/**
 * Rotating the key that seals secrets at rest (issue 31.3): two replicas on one database, one with
 * DNSPLANE_SECRETS_KEYS=OLD,NEW and one with NEW,OLD, serve signed DNS queries with every TSIG key
 * while `dnsplane secrets reseal` moves every secret (TSIG and OVH) under NEW: every query is answered
 * signed, every secret opens with NEW alone afterwards and is the one issued, and a server started with
 * OLD alone refuses to start, naming how many secrets of which tenants it cannot open. A row rotated
 * between the reseal's read and its write is left as the rotation wrote it.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsCommand } from '../../src/cli/secrets.js';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { ovhSecretContext } from '../../src/core/keys/ovh.js';
import { resealSecrets } from '../../src/core/credentials/reseal.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { createTsigKey } from '../../src/core/credentials/tsig-admin.js';
import { secretContext } from '../../src/core/keys/tsig.js';
import { RCODE, TYPE } from '../../src/dns/wire/index.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import { capturedIo } from '../helpers/cli-io.js';
import type { TestDatabase } from '../helpers/db.js';
import { startReplicas, type Replicas } from '../helpers/server.js';
import { query, udpExchange } from '../helpers/dns-client.js';
import { startServerOn } from '../helpers/sim-server.js';

const ZONE = 'rotate.test';
const OLD = randomBytes(32);
const NEW = randomBytes(32);
const b64 = (k: Buffer) => k.toString('base64');
const ENV = { DNSPLANE_ZONES: ZONE, DNSPLANE_DRIFT_INTERVAL: 'off', DNSPLANE_DNS_LISTEN: '127.0.0.1:0' };
const KEYS = 12;

let sim: OvhSimulator;
let db: TestDatabase;
let replicas: Server[] = [];
let cluster: Replicas | undefined;
const issued: Array<{ name: string; secret: Buffer }> = [];
let ovhKey: { applicationKey: string; secret: string };
const logLines: string[] = [];

beforeAll(async () => {
  const old = new SecretBox(OLD);
  const log = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
  cluster = await startReplicas({
    zones: { [ZONE]: [] },
    // The first replica seals with the old key, the second with the new one; each reads both.
    env: (i) => ({ ...ENV, DNSPLANE_SECRETS_KEYS: i === 0 ? `${b64(OLD)},${b64(NEW)}` : `${b64(NEW)},${b64(OLD)}` }),
    logger: () => log,
    async seed(fresh) {
      await createTenant(fresh.pool, { name: 'acme', zones: [ZONE] });
      await createTenant(fresh.pool, { name: 'shop', zones: [ZONE] });
      for (let i = 0; i < KEYS; i++) {
        const k = await createTsigKey(
          { pool: fresh.pool, secrets: old, actor: null },
          { tenant: i % 3 === 0 ? 'shop' : 'acme', algorithm: 'hmac-sha256', acmeOnly: false },
        );
        issued.push({ name: k.key.name, secret: k.secret });
      }
      const o = await createOvhKey({ pool: fresh.pool, secrets: old, actor: null }, { tenant: 'acme' });
      ovhKey = { applicationKey: o.key.applicationKey, secret: o.applicationSecret };
    },
  });
  ({ sim, db, servers: replicas } = cluster);
});

afterAll(async () => {
  await cluster?.close();
});

/** A signed SOA query with key `i` to replica `r`: the rcode answered and whether the answer is signed. */
async function ask(r: Server, i: number): Promise<{ rcode: number; signed: boolean }> {
  const key = issued[i]!;
  const answer = await udpExchange(r.dns!.port, query(ZONE, TYPE.SOA, { key: { name: key.name, algorithm: 'hmac-sha256', secret: key.secret } }));
  if (!answer) throw new Error(`no answer from replica ${replicas.indexOf(r)} to key ${key.name}`);
  return { rcode: answer.parsed.message.header.rcode, signed: answer.parsed.tsig !== undefined };
}

describe('secrets reseal', () => {
  it('moves every secret under the new key while both replicas answer queries signed with every key', async () => {
    const before = await store.sealedKeyIds(db.pool);
    expect(before.map((u) => [u.what, u.keyId, u.count])).toEqual([
      ['TSIG key', new SecretBox(OLD).keyIdHex, KEYS],
      ['OVH application secret', new SecretBox(OLD).keyIdHex, 1],
    ]);
    // Queries run while the reseal runs: each key first used on a replica reads its row then, in the
    // old form or the new; both replicas must open both.
    let stop = false;
    const answers: Array<{ rcode: number; signed: boolean }> = [];
    const load = (async () => {
      for (let n = 0; !stop || n < KEYS * 2; n++) answers.push(await ask(replicas[n % 2]!, n % KEYS));
    })();
    const result = await resealSecrets(db.pool, new SecretBox([NEW, OLD]));
    stop = true;
    await load;
    expect(result).toEqual({ resealed: KEYS + 1, changedMeanwhile: 0, keyId: new SecretBox(NEW).keyIdHex, from: { [new SecretBox(OLD).keyIdHex]: KEYS + 1 } });
    expect(answers.length).toBeGreaterThanOrEqual(KEYS * 2);
    expect(answers.filter((a) => a.rcode !== RCODE.NOERROR || !a.signed)).toEqual([]);

    // Nothing lost: every secret opens with NEW alone and is the one issued.
    const only = new SecretBox(NEW);
    expect((await store.sealedKeyIds(db.pool)).map((u) => [u.what, u.keyId, u.count])).toEqual([
      ['TSIG key', only.keyIdHex, KEYS],
      ['OVH application secret', only.keyIdHex, 1],
    ]);
    for (const k of issued) {
      const row = (await store.findTsigKeyForAuth(db.pool, k.name))!;
      expect(only.open(row.sealed, secretContext(k.name)).equals(k.secret)).toBe(true);
    }
    const ovh = (await store.listSealedNotUnder(db.pool, Buffer.alloc(8), 100)).find((e) => e.table === 'ovh_keys')!;
    expect(only.open(ovh.sealed, ovhSecretContext(ovhKey.applicationKey)).toString('utf8')).toBe(ovhKey.secret);
    // A replica that reads the rows again (its cache dropped) still opens them.
    for (const r of replicas) r.ctx.tsigKeys!.clear();
    for (let i = 0; i < KEYS; i++) expect(await ask(replicas[i % 2]!, i)).toEqual({ rcode: RCODE.NOERROR, signed: true });
    for (const s of [...issued.map((k) => k.secret.toString('base64')), ovhKey.secret, b64(OLD), b64(NEW)]) expect(logLines.join('\n')).not.toContain(s);
  });

  it('`dnsplane secrets reseal` then finds nothing to do', async () => {
    const io = capturedIo({ DATABASE_URL: db.url, DNSPLANE_SECRETS_KEYS: `${b64(NEW)},${b64(OLD)}` });
    expect(await secretsCommand.run(['reseal'], io)).toBe(0);
    expect(io.text()).toBe(`every secret is sealed with key ${new SecretBox(NEW).keyIdHex}: nothing to do`);
  });

  it('a server started with the old key alone refuses to start, naming how many secrets of which tenants', async () => {
    await expect(startServerOn(sim, db.url, { ...ENV, DNSPLANE_SECRETS_KEY: b64(OLD) })).rejects.toThrow(
      `DNSPLANE_SECRETS_KEY holds key ${new SecretBox(OLD).keyIdHex}, and none opens ${KEYS + 1} stored secrets (${KEYS} TSIG keys of tenants acme, shop sealed with key ${new SecretBox(NEW).keyIdHex}; 1 OVH application secret of tenant acme sealed with key ${new SecretBox(NEW).keyIdHex}): add the key they were sealed with`,
    );
  });

  it("a row changed between the reseal's read and its write is left as that change wrote it", async () => {
    const entry = (await store.listSealedNotUnder(db.pool, Buffer.alloc(8), 1))[0]!;
    const box = new SecretBox([OLD, NEW]);
    const context = secretContext(entry.label);
    const rotated = box.seal(randomBytes(32), context);
    expect(await store.replaceSealed(db.pool, entry, entry.sealed, rotated)).toBe(true);
    // The reseal read `entry` before that write: its write finds the row changed and writes nothing.
    expect(await store.replaceSealed(db.pool, entry, entry.sealed, box.seal(randomBytes(32), context))).toBe(false);
    const row = (await store.listSealedNotUnder(db.pool, Buffer.alloc(8), 100)).find((e) => e.table === entry.table && e.id === entry.id)!;
    expect(row.sealed.ciphertext.equals(rotated.ciphertext)).toBe(true);
  });
});
