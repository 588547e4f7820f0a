/**
 * TSIG keys on real servers: two replicas on one database (two CoreContexts), each with its keyring
 * cache warm. A key created, rotated or deleted, or its tenant disabled, changes what every replica's
 * keyring finds within the delivery of a notification — through the admin RPCs of either replica and
 * through the command line's path (no replica involved). The admin RPCs refuse a tenant token and name
 * the field and the rule of bad input; "last used" is coalesced; a start with keys stored and no
 * encryption key, or another one, is refused before anything is served; and no secret ever reaches a
 * log line (trace level), an error or /metrics.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import type pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretUnreadableError } from '../../src/core/errors.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { rotateTsigKey } from '../../src/core/credentials/tsig-admin.js';
import { createTsigKeyring, tsigKeyring, type TsigKey } from '../../src/core/keys/tsig.js';
import { toJson } from '@bufbuild/protobuf';
import { AdminService, ListTsigKeysResponseSchema } from '../../src/gen/dnsplane/v1/admin_pb.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';
import type { Server } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import type { TestDatabase } from '../helpers/db.js';
import { startReplicas, type Replicas } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { serviceClient, simulatorEnv, startServerOn } from '../helpers/sim-server.js';

const ZONE = 'keys.test';
const key = randomBytes(32);
const KEY_ENV = { DNSPLANE_SECRETS_KEY: key.toString('base64'), DNSPLANE_ZONES: ZONE, DNSPLANE_DRIFT_INTERVAL: 'off' };

const adminOf = (server: Server, token: string) => serviceClient(AdminService, server, token);

/** Every error message an RPC answered here, to look for secrets in. */
const errorMessages: string[] = [];

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectError);
  errorMessages.push((e as ConnectError).rawMessage);
  return e as ConnectError;
}

let sim: OvhSimulator;
let db: TestDatabase;
const logLines: string[] = [];
let replicas: Server[] = [];
let cluster: Replicas | undefined;
const tokens: Record<string, string> = {};
/** Every secret issued in this file, to look for where it must not be. */
const secrets: string[] = [];

beforeAll(async () => {
  cluster = await startReplicas({
    zones: { [ZONE]: [] },
    env: KEY_ENV,
    logger: () => pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) }),
  });
  ({ sim, db, servers: replicas } = cluster);
  tokens['root'] = (await createTenant(db.pool, { name: 'root', zones: [], admin: true })).token;
  tokens['alice'] = (await createTenant(db.pool, { name: 'alice', zones: [ZONE] })).token;
  await until('both replicas to listen', () => replicas.every((r) => r.ctx.tsigKeys!.trusted()));
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

describe('admin RPCs', () => {
  it('refuse a tenant without the admin scope, whatever the request', async () => {
    const alice = adminOf(replicas[0]!, tokens['alice']!);
    for (const call of [
      () => alice.createTsigKey({ tenant: 'alice' }),
      () => alice.listTsigKeys({}),
      () => alice.rotateTsigKey({ name: 'x' }),
      () => alice.deleteTsigKey({ name: 'x' }),
    ]) {
      const e = await refusal(call());
      expect([Code[e.code], e.rawMessage]).toEqual(['PermissionDenied', 'this call needs the admin scope; tenant "alice" does not have it']);
    }
    expect(await store.listTsigKeys(db.pool)).toEqual([]);
  });

  it('create, list, rotate, delete for an admin; journaled as the admin; the secret only in create and rotate', async () => {
    const root = adminOf(replicas[0]!, tokens['root']!);
    const created = await root.createTsigKey({ tenant: 'alice', name: 'Ops.Keys.Test.', algorithm: 'hmac-sha384', acmeOnly: true });
    secrets.push(created.secret);
    expect(created.key).toMatchObject({ name: 'ops.keys.test', tenant: 'alice', algorithm: 'hmac-sha384', acmeOnly: true });
    expect(created.key!.lastUsedAt).toBeUndefined();
    expect(Buffer.from(created.secret, 'base64')).toHaveLength(48);
    const listed = await adminOf(replicas[1]!, tokens['root']!).listTsigKeys({ tenant: 'alice' });
    expect(listed.keys.map((k) => [k.name, k.algorithm, k.acmeOnly])).toEqual([['ops.keys.test', 'hmac-sha384', true]]);
    expect(JSON.stringify(toJson(ListTsigKeysResponseSchema, listed))).not.toContain(created.secret);
    const rotated = await root.rotateTsigKey({ name: 'ops.keys.test.' });
    secrets.push(rotated.secret);
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.key!.rotatedAt).toBeDefined();
    const deleted = await root.deleteTsigKey({ name: 'ops.keys.test' });
    expect(deleted.key!.name).toBe('ops.keys.test');
    const journal = (await root.listJournal({ tenant: 'root', limit: 3 })).entries;
    expect(journal.map((e) => [e.kind, e.zone, e.tenant, e.state])).toEqual([
      ['delete-tsig-key', '', 'root', 'done'],
      ['rotate-tsig-key', '', 'root', 'done'],
      ['create-tsig-key', '', 'root', 'done'],
    ]);
    expect(journal[2]!.summary).toBe('TSIG key ops.keys.test (hmac-sha384, acme-only) of tenant alice created by root');
  });

  it('bad input: InvalidArgument or NotFound naming the field and the rule, nothing written', async () => {
    const root = adminOf(replicas[1]!, tokens['root']!);
    const before = await store.listTsigKeys(db.pool);
    const cases: Array<[() => Promise<unknown>, string, string]> = [
      [
        () => root.createTsigKey({ tenant: 'alice', algorithm: 'hmac-sha3' }),
        'InvalidArgument',
        'algorithm: must be one of hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512 (default hmac-sha256), got "hmac-sha3"',
      ],
      [() => root.createTsigKey({ tenant: 'alice', name: 'a..b' }), 'InvalidArgument', 'name: must be a DNS name of at most 253 characters'],
      [() => root.createTsigKey({ tenant: 'nobody' }), 'NotFound', 'tenant: no tenant named "nobody" (dnsplane tenant list shows them)'],
      [() => root.createTsigKey({ tenant: '' }), 'InvalidArgument', 'tenant: a tenant name is required'],
      [() => root.rotateTsigKey({ name: 'nothing.keys.test' }), 'NotFound', 'name: no TSIG key named "nothing.keys.test"'],
      [() => root.deleteTsigKey({ name: 'bad name' }), 'InvalidArgument', 'name: must be a DNS name'],
      [() => root.listTsigKeys({ tenant: 'nobody' }), 'NotFound', 'tenant: no tenant named "nobody"'],
    ];
    for (const [call, code, message] of cases) {
      const e = await refusal(call());
      expect(Code[e.code], e.rawMessage).toBe(code);
      expect(e.rawMessage.startsWith(message), e.rawMessage).toBe(true);
    }
    await root.createTsigKey({ tenant: 'alice', name: 'taken.keys.test' }).then((r) => secrets.push(r.secret));
    const taken = await refusal(root.createTsigKey({ tenant: 'root', name: 'TAKEN.keys.test' }));
    expect([Code[taken.code], taken.rawMessage]).toEqual([
      'InvalidArgument',
      'name: a TSIG key named "taken.keys.test" already exists (key names are unique across tenants: a DNS message names only its key)',
    ]);
    expect((await store.listTsigKeys(db.pool)).length).toBe(before.length + 1);
  });
});

describe('the keyring, on two replicas', () => {
  const find = (i: number, name: string) => tsigKeyring(replicas[i]!.ctx).find(name);

  it("finds a key from memory, and follows its rotation, deletion and its tenant's disabling on every replica", async () => {
    const root0 = adminOf(replicas[0]!, tokens['root']!);
    const { secret, key: created } = await root0.createTsigKey({ tenant: 'alice', name: 'cm.keys.test' });
    secrets.push(secret);
    // Warm on both: a second find is the same object, from memory. (A replica whose listener missed a
    // heartbeat reads Postgres instead for that moment: retried until memory is seen to answer.)
    for (const i of [0, 1]) {
      const k = await find(i, 'CM.keys.test.');
      expect(k).toMatchObject({ name: 'cm.keys.test', algorithm: 'hmac-sha256', acmeOnly: false });
      expect(k!.secret.toString('base64')).toBe(secret);
      expect(k!.tenant.name).toBe('alice');
      await until(`replica ${i} to answer from memory`, async () => {
        const first = await find(i, 'cm.keys.test');
        return (await find(i, 'cm.keys.test')) === first;
      });
    }
    expect(created!.name).toBe('cm.keys.test');

    // Rotated through replica 0: replica 1 sees the new secret once the notification is delivered.
    const { secret: second } = await root0.rotateTsigKey({ name: 'cm.keys.test' });
    secrets.push(second);
    expect((await find(0, 'cm.keys.test'))!.secret.toString('base64')).toBe(second);
    await until('replica 1 to find the rotated secret', async () => (await find(1, 'cm.keys.test'))!.secret.toString('base64') === second);

    // Rotated from the command line's path (no replica involved): both follow on NOTIFY alone.
    const third = await rotateTsigKey({ pool: db.pool, secrets: new SecretBox(key), actor: null }, 'cm.keys.test');
    secrets.push(third.secret.toString('base64'));
    for (const i of [0, 1])
      await until(`replica ${i} to find the secret rotated from the command line`, async () => (await find(i, 'cm.keys.test'))!.secret.equals(third.secret));

    // Its tenant disabled: not found anywhere; enabled: found again.
    await root0.disableTenant({ name: 'alice' });
    for (const i of [0, 1]) await until(`replica ${i} to stop finding a disabled tenant's key`, async () => (await find(i, 'cm.keys.test')) === undefined);
    await adminOf(replicas[1]!, tokens['root']!).disableTenant({ name: 'alice', enable: true });
    for (const i of [0, 1]) await until(`replica ${i} to find the key again`, async () => (await find(i, 'cm.keys.test')) !== undefined);

    // Deleted through replica 1.
    await adminOf(replicas[1]!, tokens['root']!).deleteTsigKey({ name: 'cm.keys.test' });
    for (const i of [0, 1]) await until(`replica ${i} to stop finding the deleted key`, async () => (await find(i, 'cm.keys.test')) === undefined);
  });

  it('finds nothing for a name that is no key, or that cannot be one, without caching it', async () => {
    expect(await find(0, 'nothing.keys.test')).toBeUndefined();
    expect(await find(0, 'not a name')).toBeUndefined();
    expect(await find(0, '')).toBeUndefined();
  });

  it('refuses to open a secret altered in the database (and never answers with a wrong one)', async () => {
    const { secret } = await adminOf(replicas[0]!, tokens['root']!).createTsigKey({ tenant: 'alice', name: 'tampered.keys.test' });
    secrets.push(secret);
    await db.pool.query(
      `UPDATE tsig_keys SET secret_ciphertext = set_byte(secret_ciphertext, 0, get_byte(secret_ciphertext, 0) # 1) WHERE name = 'tampered.keys.test'`,
    );
    // A keyring of its own (no cache), so that the altered row is read.
    const ring = createTsigKeyring({ ...replicas[0]!.ctx, tsigKeys: undefined });
    await expect(ring.find('tampered.keys.test')).rejects.toThrow(SecretUnreadableError);
  });

  it('"last used": the first use written at once (in the next batch), later ones of the interval coalesced into one write at its end', async () => {
    const { secret } = await adminOf(replicas[0]!, tokens['root']!).createTsigKey({ tenant: 'alice', name: 'busy.keys.test' });
    secrets.push(secret);
    let writes = 0;
    const real = replicas[0]!.ctx.pool;
    const counting = new Proxy(real, {
      get(target, prop) {
        if (prop === 'query') {
          return (...args: Parameters<pg.Pool['query']>) => {
            if (String(args[0]).includes('SET last_used_at')) writes++;
            return (target.query as (...a: unknown[]) => unknown)(...args);
          };
        }
        return Reflect.get(target, prop, target);
      },
    });
    let now = Date.parse('2030-01-01T00:00:00Z');
    const ring = createTsigKeyring({ ...replicas[0]!.ctx, pool: counting as pg.Pool }, { lastUsedEveryMs: 300, clock: () => now });
    const k = (await ring.find('busy.keys.test')) as TsigKey;
    const lastUsed = async () => (await store.getTsigKey(real, 'busy.keys.test'))!.lastUsedAt?.getTime();
    for (let i = 0; i < 50; i++) {
      ring.noteUsed(k);
      now += 1;
    }
    // Written at once: in the next batch of uses (within 50 ms), in one statement.
    await until('the first use to be written', async () => (await lastUsed()) !== undefined);
    expect(writes).toBe(1);
    // The 49 later uses of the interval: one write, of the latest, when the interval ends.
    await until("the interval's last use to be written", async () => (await lastUsed()) === Date.parse('2030-01-01T00:00:00.049Z'));
    expect(writes).toBe(2);
    // A use after a quiet interval is written at once again.
    now += 10_000;
    ring.noteUsed(k);
    await until('the use after a quiet interval to be written', async () => (await lastUsed()) === now);
    expect(writes).toBe(3);
    // Through the API: "last used" as the listing shows it.
    const listed = await adminOf(replicas[1]!, tokens['root']!).listTsigKeys({ tenant: 'alice' });
    expect(listed.keys.find((x) => x.name === 'busy.keys.test')!.lastUsedAt!.seconds).toBe(BigInt(Math.floor(now / 1000)));
  });
});

describe('start-up with keys stored', () => {
  it('refuses without DNSPLANE_SECRETS_KEY or with another key, before anything is served', async () => {
    expect(await store.listTsigKeys(db.pool)).not.toEqual([]);
    const lines: string[] = [];
    const log = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    await expect(startServerOn(sim, db.url, { ...KEY_ENV, DNSPLANE_SECRETS_KEY: '' }, log)).rejects.toThrow(
      /^DNSPLANE_SECRETS_KEY is not set, but the database holds \d+ stored secrets \(\d+ TSIG keys of tenant alice sealed with key [0-9a-f]{16}\): set it to the key they were sealed with; dnsplane serves nothing without it$/,
    );
    const wrong = randomBytes(32);
    await expect(startServerOn(sim, db.url, { ...KEY_ENV, DNSPLANE_SECRETS_KEY: wrong.toString('base64') }, log)).rejects.toThrow(
      `DNSPLANE_SECRETS_KEY holds key ${new SecretBox(wrong).keyIdHex}, and none opens `,
    );
    expect(lines.join('\n')).not.toContain('dnsplane is serving');
  });

  it('`dnsplane serve` exits 1 with the message', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-tsig-serve-'));
    const caFile = path.join(dir, 'ca.pem');
    writeFileSync(caFile, sim.caPem);
    const child = spawn(process.execPath, [path.resolve('bin/dnsplane-dev.js'), 'serve'], {
      env: {
        PATH: process.env['PATH'],
        DATABASE_URL: db.url,
        DNSPLANE_DATA_DIR: dir,
        DNSPLANE_LISTEN: '127.0.0.1:0',
        DNSPLANE_WEBHOOK_LISTEN: 'off',
        ...simulatorEnv(sim, caFile),
        DNSPLANE_ZONES: ZONE,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^dnsplane serve: DNSPLANE_SECRETS_KEY is not set, but the database holds \d+ stored secrets/m);
    expect(stdout).not.toContain('dnsplane is running');
  }, 60_000);
});

describe('secrets never leave', () => {
  it('no secret issued here is in any log line, error or /metrics', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    const metrics = await (await fetch(`${replicas[0]!.url}/metrics`)).text();
    const logs = logLines.join('\n');
    const errors = errorMessages.join('\n');
    expect(logs).toContain('TSIG key created');
    expect(errorMessages.length).toBeGreaterThanOrEqual(10);
    for (const s of secrets) {
      const hex = Buffer.from(s, 'base64').toString('hex');
      for (const [where, text] of [
        ['logs', logs],
        ['errors', errors],
        ['metrics', metrics],
      ] as const) {
        expect(text.includes(s), `${where} hold a secret`).toBe(false);
        expect(text.includes(hex), `${where} hold a secret in hex`).toBe(false);
      }
    }
  });
});
